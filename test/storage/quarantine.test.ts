// Issue 34 §1: one value never blocks a day. A wallet book logged with the double's noise
// ("64.50999999999999", as the normalizer wrote it before sizes were canonicalized) made `compact`
// exit 1 for the whole day: no wallet partition, no yes/no partition either, and the rows route
// answered 500. Now the record is set aside whole in the partition's _quarantine.jsonl, counted in
// its manifest, every other record, market, family and dataset is compacted, the rows route answers
// the same rows as the Parquet, and the market's log is kept past retention (the API serves it).

import t from 'tap';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tableFromIPC, type Table } from 'apache-arrow';
import { DuckDBInstance } from '@duckdb/node-api';
import { compactDay } from '../../src/storage/compaction/compact-day.js';
import { deleteExpiredLogs } from '../../src/storage/compaction/retention.js';
import { readManifest, partitionDir } from '../../src/storage/parquet/manifest.js';
import { logFilePath } from '../../src/storage/paths.js';
import { checkPartitions } from '../../src/storage/parquet/partition-check.js';
import type { Observation } from '../../src/schema/observation.js';
import {
  catalog,
  keysFor,
  testApp,
  testConfig,
  tmpDataDir,
  walletMarket,
  writeLog,
  yesnoMarket,
  yesnoRecords,
  T0,
  type Tap,
} from '../api/helpers.js';

const DAY = '2026-07-26';
const BAD = '2650577';
const GOOD = '2650578';

function walletBooks(start: number, n: number, noisyAt: number | null): Observation[] {
  const out: Observation[] = [];
  for (let i = 0; i < n; i++) {
    const size = i === noisyAt ? '64.50999999999999' : `${64 + i}.51`;
    out.push({
      type: 'book',
      token_id: '7001',
      units: 'decimal',
      bids: [
        ['0.48', size],
        ['0.47', '10'],
      ],
      asks: [['0.52', '5']],
      recv_ts: start + i * 1000,
      source_ts: start + i * 1000 - 5,
      version: i + 1,
    });
  }
  return out;
}

async function seed(dir: string): Promise<void> {
  for (const id of [BAD, GOOD]) {
    await writeLog(dir, 'wallet-prediction', 'catalog', id, [catalog({ ...walletMarket, market_id: id }, T0 - 2000)]);
  }
  await writeLog(dir, 'wallet-prediction', 'books', BAD, walletBooks(T0, 20, 4));
  await writeLog(dir, 'wallet-prediction', 'books', GOOD, walletBooks(T0, 20, null));
  await writeLog(dir, 'yesno-exchange', 'catalog', yesnoMarket.market_id, [catalog(yesnoMarket, T0 - 3000)]);
  await writeLog(dir, 'yesno-exchange', 'books', yesnoMarket.market_id, yesnoRecords(T0, 30, 1000));
}

async function rows(t: Tap, dir: string, key: string, market: string): Promise<{ status: number; table: Table | null; body: string }> {
  const app = await testApp(t, testConfig(dir));
  const base = await app.listen({ port: 0, host: '127.0.0.1' });
  const res = await fetch(
    `${base}/v3/datasets/rows?family=wallet-prediction&dataset=book_changes&market_id=${market}&start_time=${T0 - 60_000}&end_time=${T0 + 3_600_000}`,
    { headers: { authorization: `Bearer ${key}` } },
  );
  const buf = Buffer.from(await res.arrayBuffer());
  await app.close();
  return { status: res.status, table: res.status === 200 ? tableFromIPC(buf) : null, body: res.status === 200 ? '' : buf.toString() };
}

const plain = (tb: Table): string =>
  JSON.stringify(
    tb.toArray().map((r) => r.toJSON()),
    (_k, v) => (typeof v === 'bigint' ? String(v) : v),
  );

t.test('a value its column cannot hold is set aside; the day, the other markets and families are compacted', async (t) => {
  const dir = tmpDataDir(t);
  await seed(dir);
  const { paid } = await keysFor(dir);
  const before = await rows(t, dir, paid, BAD);
  t.equal(before.status, 200, `the rows route answers from the log, not 500 (${before.body.slice(0, 200)})`);

  const rs = await compactDay(dir, DAY);
  const get = (family: string, dataset: string) => rs.find((r) => r.family === family && r.dataset === dataset);
  t.equal(get('wallet-prediction', 'book_changes')?.status, 'written', 'the wallet books are compacted');
  t.equal(get('wallet-prediction', 'book_changes')?.quarantined, 1, 'one record set aside');
  t.equal(get('yesno-exchange', 'book_changes')?.status, 'written', 'the yes/no family of the same day too');
  t.notOk(
    rs.some((r) => r.status === 'failed'),
    'nothing failed',
  );

  const pdir = partitionDir(dir, 'wallet-prediction', 'book_changes', DAY);
  const m = (await readManifest(pdir))!;
  const file = readFileSync(join(pdir, '_quarantine.jsonl'));
  t.same(
    { ...m.quarantine },
    {
      records: 1,
      markets: { [BAD]: 1 },
      file: '_quarantine.jsonl',
      bytes: file.length,
      sha256: createHash('sha256').update(file).digest('hex'),
    },
    'the manifest counts it and names its file',
  );
  const lines = file
    .toString()
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  t.equal(lines.length, 1);
  t.equal(lines[0].market, BAD);
  t.equal(lines[0].seq, 5);
  t.match(lines[0].reason, /market 2650577 seq 5 size: value "64.50999999999999" has 14 decimals, more than DECIMAL\(18, 8\) holds/);
  t.same(lines[0].record, { ...walletBooks(T0, 20, 4)[4], seq: 5 }, 'the whole record, exactly as logged');
  t.same(
    (await checkPartitions(dir, false)).filter((c) => !c.ok),
    [],
    'verify is clean, the quarantine file included',
  );
  const snaps = await readManifest(partitionDir(dir, 'wallet-prediction', 'book_snapshots', DAY));
  t.ok(
    (snaps?.quarantine?.records ?? 0) > 0 && snaps?.quarantine?.file === undefined,
    `book_snapshots counts the seconds left out (${snaps?.quarantine?.records})`,
  );

  // DuckDB reads the tree; the bad market has every record but the one set aside.
  const db = await DuckDBInstance.create(':memory:');
  const conn = await db.connect();
  t.teardown(() => {
    conn.closeSync();
    db.closeSync();
  });
  const glob = `${dir}/parquet/family=wallet-prediction/dataset=book_changes/**/*.parquet`;
  const seqs = (
    await conn.runAndReadAll(`SELECT DISTINCT seq::INTEGER AS seq FROM read_parquet('${glob}') WHERE market_id = '${BAD}' ORDER BY seq`)
  )
    .getRowObjectsJS()
    .map((r) => r.seq);
  t.same(seqs, [1, 2, 3, 4, ...Array.from({ length: 15 }, (_, i) => i + 6)], 'seq 5 alone is missing from the Parquet');

  const after = await rows(t, dir, paid, BAD);
  t.equal(after.status, 200);
  t.equal(plain(after.table!), plain(before.table!), 'the rows route: the same rows from the log and from the Parquet');
  t.equal(after.table!.numRows, 19 * 3, 'three rows a record, the set-aside one left out');

  const ret = await deleteExpiredLogs(dir, Date.now(), 0);
  const badLog = logFilePath(dir, { family: 'wallet-prediction', stream: 'books', market: BAD }, DAY);
  t.ok(existsSync(badLog), 'the log of the market with a set-aside record is kept (the API serves it)');
  t.match(ret.kept.find((k) => k.file === badLog)?.why ?? '', /1 record\(s\) set aside in .*_quarantine\.jsonl/);
  t.notOk(
    existsSync(logFilePath(dir, { family: 'wallet-prediction', stream: 'books', market: GOOD }, DAY)),
    "the other market's log is retired",
  );
  t.notOk(
    existsSync(logFilePath(dir, { family: 'yesno-exchange', stream: 'books', market: yesnoMarket.market_id }, DAY)),
    'and the yes/no one',
  );
  const rerun = await compactDay(dir, DAY);
  t.equal(
    rerun.find((r) => r.family === 'wallet-prediction' && r.dataset === 'book_changes')?.status,
    'unchanged',
    'a rerun keeps the partition',
  );
  writeFileSync(join(pdir, '_quarantine.jsonl'), file.toString().replace('64.5', '64.6'));
  t.match(
    (await checkPartitions(dir, false)).filter((c) => !c.ok),
    [{ file: join(pdir, '_quarantine.jsonl'), problem: /sha256 differs from the manifest/ }],
    'verify names a quarantine file that changed',
  );
});

t.test('a stream that fails for another reason fails alone: every other family and stream is compacted', async (t) => {
  const dir = tmpDataDir(t);
  await seed(dir);
  // A day "file" that is a folder: reading it throws EISDIR (not a value: nothing to set aside).
  const log = logFilePath(dir, { family: 'wallet-prediction', stream: 'books', market: GOOD }, DAY);
  rmSync(log);
  mkdirSync(log);
  const rs = await compactDay(dir, DAY);
  const failed = rs.filter((r) => r.status === 'failed');
  t.same(
    failed.map((r) => `${r.family}/${r.dataset}`).sort(),
    // The books stream and what is derived from it (snapshots, candles), and `markets`, which reads the
    // books' first and last records; never the catalogue.
    [
      'wallet-prediction/book_changes',
      'wallet-prediction/book_snapshots',
      'wallet-prediction/candles',
      'wallet-prediction/gaps',
      'wallet-prediction/markets',
      'wallet-prediction/trades',
    ],
    'the wallet books stream alone failed, with what reads it',
  );
  t.ok(
    failed.every((r) => typeof r.error === 'string' && r.error.length > 0),
    `with the reason (${failed[0]?.error})`,
  );
  t.equal(
    rs.find((r) => r.family === 'yesno-exchange' && r.dataset === 'book_changes')?.status,
    'written',
    'the yes/no books are compacted',
  );
  t.equal(rs.find((r) => r.family === 'wallet-prediction' && r.dataset === 'catalog')?.status, 'written', 'and the wallet catalogue');
});
