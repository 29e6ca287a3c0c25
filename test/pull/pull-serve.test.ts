// `pmtape pull` against a real `pmtape serve` over compacted days: a full mirror byte for byte, a
// second run that downloads nothing, a truncated and a corrupted local file fetched again (the
// sidecar cache must not hide a flipped byte even with its mtime put back), key and plan
// refusals, filters, and DuckDB reading the pulled tree with Hive partitioning.

import t from 'tap';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync, truncateSync, writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { writeFixture } from '../../tools/fixtures/compaction-logs.js';
import { compactDay } from '../../src/storage/testing.js';
import { createKey } from '../../src/api/plugins/keys.js';
import { DAY_MS, utcDay } from '../../src/schema/time.js';
import { getJson, runCli, runCliOnce, tempDir } from '../selfhost/helpers.js';
import { flipByteKeepTimes, summaryOf } from './fake-server.js';

// Generous bounds: six engineers share two cores, and every run is a fresh node process.
t.setTimeout(300_000);
const SLOW = { timeoutMs: 150_000 };

interface Listed {
  path: string;
  rows: number;
  bytes: number;
  sha256: string;
}

async function listing(url: string, key: string, query = ''): Promise<Listed[]> {
  const out: Listed[] = [];
  let cursor: string | null = null;
  do {
    const r: { status: number; body: any } = await getJson(
      `${url}/v3/datasets?limit=3${query}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      key,
    );
    if (r.status !== 200) throw new Error(`listing: ${r.status} ${JSON.stringify(r.body)}`);
    out.push(...(r.body.data as Listed[]));
    cursor = r.body.next_cursor as string | null;
  } while (cursor);
  return out;
}

const sha = (b: Buffer): string => createHash('sha256').update(b).digest('hex');
const staged = (dir: string): string[] =>
  readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && e.name.startsWith('_'))
    .map((e) => e.name);

t.test('pull mirrors a real server, skips what is unchanged and fetches damaged copies again', async (t) => {
  const dataDir = tempDir(t, 'pmtape-pull-data-');
  const days = [utcDay(Date.now() - 2 * DAY_MS), utcDay(Date.now() - DAY_MS)];
  await writeFixture(dataDir, { days, booksPerDay: 400, coinMarkets: 2, seed: 5 });
  for (const day of days) await compactDay(dataDir, day);
  const paid = (await createKey(dataDir, 'paid', 'pull-paid')).key;
  const free = (await createKey(dataDir, 'free', 'pull-free')).key;
  const server = runCli(t, ['serve', '--data-dir', dataDir, '--port', '0'], { env: { PMTAPE_RATE_LIMITS: 'off' }, readyTimeoutMs: 60_000 });
  const url = await server.ready;
  const files = await listing(url, paid);
  t.ok(files.length >= 8, `the server lists several files (${files.length})`);
  const total = files.reduce((n, f) => n + f.bytes, 0);
  const out = join(tempDir(t, 'pmtape-pull-out-'), 'mirror');
  mkdirSync(join(out, 'family=coin'), { recursive: true });
  writeFileSync(join(out, 'notes.txt'), 'mine');
  writeFileSync(join(out, 'family=coin', 'my-own.parquet'), 'not from the server');

  const first = await runCliOnce(['pull', url, '--key', paid, '--out', out, '--concurrency', '3'], SLOW);
  t.equal(first.code, 0, first.stderr);
  t.same(summaryOf(first.stdout), { files: files.length, downloaded: files.length, skipped: 0, bytes: total, failed: 0 });
  for (const f of files) {
    const mine = readFileSync(join(out, f.path));
    t.ok(mine.equals(readFileSync(join(dataDir, 'parquet', f.path))), `${f.path}: the server's bytes`);
    t.equal(sha(mine), f.sha256, `${f.path}: the listed sha256`);
  }
  t.same(staged(out), [], 'no staging file is left');

  t.test('a second run over the unchanged tree downloads nothing (key from PMTAPE_KEY)', async (t) => {
    const r = await runCliOnce(['pull', url, '--out', out], { ...SLOW, env: { PMTAPE_KEY: paid } });
    t.equal(r.code, 0, r.stderr);
    t.same(summaryOf(r.stdout), { files: files.length, downloaded: 0, skipped: files.length, bytes: 0, failed: 0 });
  });

  t.test('a truncated copy and a copy with one byte flipped (mtime put back) are fetched again', async (t) => {
    const [a, b] = [...files].sort((x, y) => y.bytes - x.bytes);
    truncateSync(join(out, a.path), Math.floor(a.bytes / 2));
    const bFile = join(out, b.path);
    const before = statSync(bFile, { bigint: true });
    flipByteKeepTimes(bFile, Math.floor(b.bytes / 2));
    t.equal(statSync(bFile, { bigint: true }).mtimeNs, before.mtimeNs, 'same size, same mtime: only ctime tells');
    const r = await runCliOnce(['pull', url, '--key', paid, '--out', out], SLOW);
    t.equal(r.code, 0, r.stderr);
    t.same(summaryOf(r.stdout), { files: files.length, downloaded: 2, skipped: files.length - 2, bytes: a.bytes + b.bytes, failed: 0 });
    t.match(r.stderr, `${a.path}: the local copy has ${Math.floor(a.bytes / 2)} bytes`);
    t.match(r.stderr, `${b.path}: the local copy does not match its sha256`);
    for (const f of [a, b]) t.equal(sha(readFileSync(join(out, f.path))), f.sha256, `${f.path} is whole again`);
  });

  t.test('local files the server does not list are left alone', async (t) => {
    t.equal(readFileSync(join(out, 'notes.txt'), 'utf8'), 'mine');
    t.equal(readFileSync(join(out, 'family=coin', 'my-own.parquet'), 'utf8'), 'not from the server');
  });

  t.test("DuckDB reads the pulled tree with Hive partitioning: the server's row counts", async (t) => {
    const db = await DuckDBInstance.create(':memory:');
    const con = await db.connect();
    t.teardown(() => con.closeSync());
    const pairs = new Map<string, number>();
    for (const f of files) {
      const pair = f.path.split('/').slice(0, 2).join('/');
      pairs.set(pair, (pairs.get(pair) ?? 0) + f.rows);
    }
    for (const [pair, rows] of pairs) {
      const got = (
        await con.runAndReadAll(
          `SELECT count(*)::INTEGER AS n, count(DISTINCT date)::INTEGER AS d FROM read_parquet('${out}/${pair}/**/*.parquet', hive_partitioning=true)`,
        )
      ).getRowObjectsJS()[0];
      t.equal(got.n, rows, `${pair}: ${rows} rows as listed`);
      // A day without rows has one empty file: it holds no row to count a date by.
      t.equal(
        got.d,
        new Set(files.filter((f) => f.path.startsWith(pair + '/') && f.rows > 0).map((f) => f.path.split('/')[2])).size,
        `${pair}: every date partition with rows is discovered`,
      );
    }
  });

  t.test('filters narrow the mirror to what the server lists under them', async (t) => {
    const dest = tempDir(t, 'pmtape-pull-filter-');
    const coin = await listing(url, paid, `&family=coin&start_date=${days[1]}`);
    const r = await runCliOnce(['pull', url, '--key', paid, '--out', dest, '--family', 'coin', '--start-date', days[1]], SLOW);
    t.equal(r.code, 0, r.stderr);
    t.same(summaryOf(r.stdout), {
      files: coin.length,
      downloaded: coin.length,
      skipped: 0,
      bytes: coin.reduce((n, f) => n + f.bytes, 0),
      failed: 0,
    });
    t.ok(coin.length > 0 && coin.every((f) => existsSync(join(dest, f.path))));
    t.notOk(existsSync(join(dest, 'family=wallet-prediction')), 'nothing of other families');
    const dataset = /dataset=([^/]+)/.exec(files[0].path)![1];
    const only = files.filter((f) => f.path.includes(`/dataset=${dataset}/`));
    const d = await runCliOnce(['pull', url, '--key', paid, '--out', dest, '--dataset', dataset], SLOW);
    t.equal(d.code, 0, d.stderr);
    const got = summaryOf(d.stdout);
    t.equal(got.files, only.length, `--dataset ${dataset}: only its files are listed`);
    t.equal(got.downloaded + got.skipped, only.length);
  });

  t.test('a bad key (401) and a free key on wallet-prediction (403) exit non-zero and write nothing', async (t) => {
    const dest = join(tempDir(t, 'pmtape-pull-denied-'), 'm');
    const bad = await runCliOnce(['pull', url, '--key', 'pmt_not-a-key', '--out', dest], SLOW);
    t.equal(bad.code, 1);
    t.match(bad.stderr, /HTTP 401 unauthorized/);
    const plan = await runCliOnce(['pull', url, '--key', free, '--out', dest, '--family', 'wallet-prediction'], SLOW);
    t.equal(plan.code, 1);
    t.match(plan.stderr, /HTTP 403 plan_required/);
    t.notOk(existsSync(dest), 'no output folder was even created');
    const freeAll = await runCliOnce(['pull', url, '--key', free, '--out', dest], SLOW);
    t.equal(freeAll.code, 0, 'a free key mirrors what its plan lists');
    t.equal(summaryOf(freeAll.stdout).files, files.filter((f) => !f.path.startsWith('family=wallet-prediction/')).length);
  });
});
