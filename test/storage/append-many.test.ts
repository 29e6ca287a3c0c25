// appendMany: a group is appended in order with consecutive seqs, acknowledged by one promise after
// its fsync, split across day files at UTC midnight, indexed like single appends (checkpoints too),
// all-or-nothing when a record is refused, and durable under kill -9 like append.

import t, { type Test } from 'tap';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { StorageError } from '../../src/errors.js';
import type { Observation, Recorded } from '../../src/schema/observation.js';
import { checkLogFile, listDays, logFilePath, openReader, openWriter, verifyDataDir, type LogKey } from '../../src/storage/testing.js';
import { book, mixed, trade } from './helpers/records.js';
import { helperPath, kill9, startNode } from './helpers/proc.js';

const key: LogKey = { family: 'coin', stream: 'books', market: 'group-market' };
const MIDNIGHT = Date.UTC(2026, 9, 3);

function tmp(t: Test): string {
  const dir = mkdtempSync(join(tmpdir(), 'pmtape-many-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

async function readAll(dir: string, k: LogKey = key): Promise<Array<{ rec: Recorded; day: string }>> {
  const out: Array<{ rec: Recorded; day: string }> = [];
  for await (const it of openReader(dir, k).read('start')) out.push({ rec: it.rec, day: it.pos.day });
  return out;
}

t.test('a group gets consecutive seqs in order, between single appends, and reads back exactly', async (t) => {
  const dir = tmp(t);
  const w = await openWriter(dir, key, { fsyncIntervalMs: 5 });
  const group = Array.from({ length: 50 }, (_, i) => mixed(MIDNIGHT + 10 + i, i + 2));
  const order: string[] = [];
  const p1 = w.append(trade(MIDNIGHT + 1, 1)).then((r) => (order.push('one'), r));
  const pg = w.appendMany(group).then((r) => (order.push('group'), r));
  const p3 = w.append(trade(MIDNIGHT + 100, 52)).then((r) => (order.push('three'), r));
  const [r1, rg, r3] = await Promise.all([p1, pg, p3]);
  t.same(order, ['one', 'group', 'three'], 'promises settle in call order');
  t.equal(r1.seq, 1);
  t.same(
    rg.map((r) => r.seq),
    group.map((_, i) => i + 2),
    'the group takes seqs 2..51',
  );
  t.equal(r3.seq, 52, 'the next append continues after the group');
  t.ok(
    rg.every((r, i) => isDeepStrictEqual(r, { ...group[i], seq: i + 2 })),
    'each result is its record plus seq',
  );
  t.same(w.lastRecord(), { ...trade(MIDNIGHT + 100, 52), seq: 52 }, 'lastRecord is the newest');
  const all = await readAll(dir);
  t.equal(all.length, 52);
  t.ok(
    all.every(({ rec }, i) => rec.seq === i + 1),
    'the file holds them in seq order',
  );
  t.ok(
    all.slice(1, 51).every(({ rec }, i) => isDeepStrictEqual(rec, { ...group[i], seq: i + 2 })),
    'every grouped record reads back exactly',
  );
  t.same(await w.appendMany([]), [], 'an empty group resolves to nothing');
  await w.close();
  const again = await openWriter(dir, key);
  t.equal(again.lastRecord()?.seq, 52, 'after reopen the log continues at seq 52');
  t.same((await again.appendMany([trade(MIDNIGHT + 200, 53)]))[0].seq, 53);
  await again.close();
});

t.test('a group resolves only after its fsync: at the record limit or on flush, not before', async (t) => {
  const dir = tmp(t);
  const w = await openWriter(dir, key, { fsyncIntervalMs: 3_600_000, fsyncMaxRecords: 10 });
  t.teardown(() => w.close());
  let done = false;
  const p = w.appendMany([trade(MIDNIGHT + 1, 1), trade(MIDNIGHT + 2, 2)]).then(() => (done = true));
  await new Promise((r) => setTimeout(r, 100));
  t.equal(done, false, 'two records are below the limit: nothing acknowledged yet');
  t.same(await listDays(dir, key), [], 'and nothing written');
  const big = w.appendMany(Array.from({ length: 8 }, (_, i) => trade(MIDNIGHT + 3 + i, 3 + i)));
  await Promise.all([p, big]);
  t.equal(done, true, 'the group that reaches 10 records commits both groups');
  const p2 = w.appendMany([trade(MIDNIGHT + 20, 11)]);
  await w.flush();
  t.equal((await p2)[0].seq, 11, 'flush() acknowledges a pending group');
});

t.test('a group across UTC midnight is split into both day files with their own index', async (t) => {
  const dir = tmp(t);
  const w = await openWriter(dir, key);
  const group = Array.from({ length: 40 }, (_, i) => book(MIDNIGHT - 20 + i, i + 1, 30));
  const recs = await w.appendMany(group);
  await w.close();
  t.same(
    recs.map((r) => r.seq),
    group.map((_, i) => i + 1),
  );
  t.same(await listDays(dir, key), ['2026-10-02', '2026-10-03']);
  const all = await readAll(dir);
  t.same(
    all.map((x) => x.day),
    group.map((o) => (o.recv_ts < MIDNIGHT ? '2026-10-02' : '2026-10-03')),
    'each record is in the day file of its recv_ts',
  );
  for (const day of ['2026-10-02', '2026-10-03']) {
    const checks = await checkLogFile(logFilePath(dir, key, day), { repair: false });
    t.ok(
      checks.every((c) => c.ok),
      `${day}: log and index match a rebuild (${JSON.stringify(checks)})`,
    );
  }
});

t.test('checkpoint flags mark the index: one flag for all, or one per record', async (t) => {
  const dir = tmp(t);
  const w = await openWriter(dir, key);
  const base = MIDNIGHT + 1000;
  const flags = [false, true, false, false, true, false];
  await w.appendMany(
    flags.map((_, i) => book(base + i * 10, i + 1, 3)),
    { checkpoint: flags },
  );
  await w.appendMany([book(base + 100, 7, 3), book(base + 110, 8, 3)], { checkpoint: true });
  await t.rejects(
    w.appendMany([book(base + 200, 9, 3)], { checkpoint: [true, false] }),
    StorageError,
    'a flag list of the wrong length is refused',
  );
  await w.close();
  const r = openReader(dir, key);
  t.equal((await r.checkpointAtOrBefore(base + 45))?.rec.seq, 5, 'the newest checkpoint at or before T (per-record flags)');
  t.equal((await r.checkpointAtOrBefore(base + 39))?.rec.seq, 2);
  t.equal(await r.checkpointAtOrBefore(base + 5), null, 'none before the first flagged record');
  t.equal((await r.checkpointAtOrBefore(base + 105))?.rec.seq, 7, 'flag for all: the first of the group');
  t.equal((await r.checkpointAtOrBefore(base + 1000))?.rec.seq, 8, 'and the second');
  const checks = await checkLogFile(logFilePath(dir, key, '2026-10-03'), { repair: false });
  t.ok(
    checks.every((c) => c.ok),
    'the index equals a rebuild from the log',
  );
});

t.test('a group with one bad record is refused whole: nothing written, seq unchanged', async (t) => {
  const dir = tmp(t);
  const w = await openWriter(dir, key);
  t.teardown(() => w.close());
  await w.append(trade(MIDNIGHT + 50, 1));
  const size = statSync(logFilePath(dir, key, '2026-10-03')).size;
  const backwards = [trade(MIDNIGHT + 51, 2), trade(MIDNIGHT + 53, 3), trade(MIDNIGHT + 52, 4)];
  await t.rejects(w.appendMany(backwards), { name: 'StorageError', message: /record 2 of 3/ }, 'time going backwards inside the group');
  await t.rejects(w.appendMany([trade(MIDNIGHT + 49, 2)]), StorageError, 'older than the log');
  const unencodable = { ...trade(MIDNIGHT + 60, 3), size: 10n } as unknown as Observation;
  await t.rejects(
    w.appendMany([trade(MIDNIGHT + 60, 2), unencodable]),
    { name: 'StorageError', message: /record 1 of 2/ },
    'a value JSON cannot hold',
  );
  await t.rejects(
    w.appendMany([trade(MIDNIGHT + 60, 2), { ...trade(MIDNIGHT + 61, 3), type: 'nope' } as unknown as Observation]),
    StorageError,
    'an unknown type',
  );
  await t.rejects(w.appendMany('nope' as unknown as Observation[]), StorageError, 'not an array');
  await w.flush();
  t.equal(statSync(logFilePath(dir, key, '2026-10-03')).size, size, 'the log did not grow');
  const ok = await w.appendMany([trade(MIDNIGHT + 60, 2), trade(MIDNIGHT + 61, 3)]);
  t.same(
    ok.map((r) => r.seq),
    [2, 3],
    'the next group takes the next seqs: no hole',
  );
  t.same(
    (await readAll(dir)).map(({ rec }) => rec.seq),
    [1, 2, 3],
  );
});

t.test('the caller may reuse its array once appendMany returns', async (t) => {
  const dir = tmp(t);
  const w = await openWriter(dir, key);
  t.teardown(() => w.close());
  const arr: Observation[] = [trade(MIDNIGHT + 1, 1), trade(MIDNIGHT + 2, 2)];
  const p = w.appendMany(arr);
  arr.length = 0;
  arr.push(trade(MIDNIGHT + 9, 9));
  t.same(
    (await p).map((r) => r.seq),
    [1, 2],
    'the results follow what was appended',
  );
  const bytes = readFileSync(logFilePath(dir, key, '2026-10-03'));
  t.ok(bytes.includes(Buffer.from('"size":"2"')), 'and so does the file');
});

t.test('every acknowledged group survives kill -9 exactly once, across midnight', async (t) => {
  const dir = tmp(t);
  const market = 'group/crash';
  const k: LogKey = { family: 'coin', stream: 'books', market };
  const start = MIDNIGHT - 500; // 1 ms per record: the kills land before and after midnight
  const acked = new Set<number>();
  for (let round = 0; round < 6; round++) {
    const child = startNode(helperPath('group-writer-child.js'), [dir, market, String(start)]);
    t.teardown(() => kill9(child));
    const ready = await child.waitFor(/^ready \d+$/);
    const at = Number(ready.split(' ')[1]);
    t.ok(at >= Math.max(0, ...acked), `round ${round}: reopened at seq ${at}, not before the last acknowledged`);
    // Kill at a random moment: once a random number of records is acknowledged, plus up to 5 ms.
    const target = at + 100 + Math.floor(Math.random() * 200);
    const lastAcked = (): number => Math.max(0, ...child.lines.map((l) => Number(/^ack \d+ (\d+)$/.exec(l)?.[1] ?? 0)));
    for (const until = Date.now() + 10_000; Date.now() < until && lastAcked() < target;) await new Promise((r) => setTimeout(r, 2));
    await new Promise((r) => setTimeout(r, Math.random() * 5));
    await kill9(child);
    for (const l of child.lines) {
      const m = /^ack (\d+) (\d+)$/.exec(l);
      if (m) for (let s = Number(m[1]); s <= Number(m[2]); s++) acked.add(s);
    }
  }
  t.ok(acked.size > 50, `groups were acknowledged (${acked.size} records)`);
  const w = await openWriter(dir, k);
  await w.close();
  const checks = await verifyDataDir(dir, { repair: false });
  t.same(
    checks.filter((c) => !c.ok),
    [],
    'verify finds no damage after recovery',
  );
  t.same(await listDays(dir, k), ['2026-10-02', '2026-10-03'], 'the groups spanned midnight');
  const seen = (await readAll(dir, k)).map(({ rec }) => rec);
  t.ok(
    seen.every((rec, i) => rec.seq === i + 1),
    'seqs run 1..n with no hole and no repeat',
  );
  t.ok(
    seen.every((rec) => isDeepStrictEqual(rec, { ...mixed(rec.recv_ts, rec.seq), seq: rec.seq })),
    'every record reads back exactly',
  );
  const present = new Set(seen.map((r) => r.seq));
  t.same(
    [...acked].filter((s) => !present.has(s)),
    [],
    'no acknowledged record is lost',
  );
});

t.test('write and writeMany: the same log, seqs and acknowledgement, with nothing handed back', async (t) => {
  const dir = tmp(t);
  const w = await openWriter(dir, key, { fsyncIntervalMs: 3_600_000, fsyncMaxRecords: 6 });
  t.teardown(() => w.close());
  let done = false;
  const p1 = w.write(trade(MIDNIGHT + 1, 1)).then((v) => ((done = true), v));
  const p2 = w.writeMany([trade(MIDNIGHT + 2, 2), book(MIDNIGHT + 3, 3, 4)], { checkpoint: [false, true] });
  await new Promise((r) => setTimeout(r, 100));
  t.equal(done, false, 'below the record limit: not acknowledged yet');
  const p3 = w.append(trade(MIDNIGHT + 4, 4));
  const p4 = w.writeMany([trade(MIDNIGHT + 5, 5), trade(MIDNIGHT + 6, 6)]);
  t.same(await Promise.all([p1, p2, p4]), [undefined, undefined, undefined], 'resolved with nothing once fsynced');
  t.equal((await p3).seq, 4, 'an append between them gets the next seq');
  t.same(
    (await readAll(dir)).map(({ rec }) => rec.seq),
    [1, 2, 3, 4, 5, 6],
    'all on disk, in order',
  );
  t.equal((await openReader(dir, key).checkpointAtOrBefore(MIDNIGHT + 10))?.rec.seq, 3, 'checkpoint flags apply');
  await t.rejects(w.write(trade(MIDNIGHT, 7)), StorageError, 'write refuses a record older than the log');
  await t.rejects(
    w.writeMany([trade(MIDNIGHT + 7, 7), trade(MIDNIGHT + 6, 8)]),
    { name: 'StorageError', message: /record 1 of 2/ },
    'writeMany is all or nothing',
  );
  t.same(await w.writeMany([]), undefined, 'an empty group resolves at once');
});
