// The writer's contract: one writer per log (across processes), seq continuity across reopen and
// day files, UTC-midnight rollover, refusing times that go backwards, group commit, backpressure.

import t, { type Test } from 'tap';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawn } from 'node:child_process';
import { LockedError, StorageError } from '../../src/errors.js';
import type { Observation } from '../../src/schema/observation.js';
import { listDays, listKeys, lockFilePath, logFilePath, openReader, openWriter, type LogKey } from '../../src/storage/testing.js';
import { book, trade } from './helpers/records.js';
import { helperPath, kill9, startNode } from './helpers/proc.js';

const key: LogKey = { family: 'coin', stream: 'books', market: 'btc-updown-5m' };
const MIDNIGHT = Date.UTC(2026, 9, 3);

function tmp(t: Test): string {
  const dir = mkdtempSync(join(tmpdir(), 'pmtape-log-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

async function seqsAndDays(dir: string, k: LogKey = key): Promise<Array<[number, string]>> {
  const out: Array<[number, string]> = [];
  for await (const it of openReader(dir, k).read('start')) out.push([it.rec.seq, it.pos.day]);
  return out;
}

t.test('a second writer is refused in the same process and in another process, until the first closes', async (t) => {
  const dir = tmp(t);
  const w = await openWriter(dir, key);
  await t.rejects(openWriter(dir, key), LockedError, 'same process');
  const child = startNode(helperPath('writer-child.js'), [dir, key.market, String(MIDNIGHT), '1']);
  t.teardown(() => kill9(child));
  const { code } = await child.exited;
  t.not(code, 0, 'the other process fails');
  t.match(child.stderr(), /locked by process \d+.*another recorder is writing this market/s, 'with a message that says why and what to do');
  await w.close();
  const again = startNode(helperPath('writer-child.js'), [dir, key.market, String(MIDNIGHT), '3']);
  t.teardown(() => kill9(again));
  await again.waitFor(/^done 3$/);
  t.same(
    (await seqsAndDays(dir)).map((x) => x[0]),
    [1, 2, 3],
    'after close another process writes',
  );
});

t.test("a dead process's lock is taken over", async (t) => {
  const dir = tmp(t);
  const dead = spawn(process.execPath, ['-e', '']);
  await new Promise((r) => dead.on('close', r));
  const w0 = await openWriter(dir, key);
  await w0.close();
  writeFileSync(lockFilePath(dir, key), `${dead.pid}\n`);
  const w = await openWriter(dir, key);
  t.match(readFileSync(lockFilePath(dir, key), 'utf8'), new RegExp(`^${process.pid}( \\d+)?\\n$`), 'the lock now names this process');
  await w.close();
  writeFileSync(lockFilePath(dir, key), 'garbage');
  await (await openWriter(dir, key)).close();
  t.pass('an unreadable lock is taken over too');
  if (existsSync(`/proc/${process.ppid}/stat`)) {
    // A live process that got the dead holder's pid (pid reuse after a restart): the recorded
    // start time does not match, so the lock is stale.
    writeFileSync(lockFilePath(dir, key), `${process.ppid} 1\n`);
    await (await openWriter(dir, key)).close();
    t.pass('a reused pid (live, but started later than the holder) does not hold the lock');
  }
});

t.test('seq continues across reopen and day files; records land in the day file of their recv_ts', async (t) => {
  const dir = tmp(t);
  let w = await openWriter(dir, key, { fsyncIntervalMs: 1 });
  await w.append(trade(MIDNIGHT - 2, 1));
  await w.append(trade(MIDNIGHT - 1, 2)); // 23:59:59.999
  await w.close();
  w = await openWriter(dir, key, { fsyncIntervalMs: 1 });
  t.equal(w.lastRecord()?.seq, 2);
  const ps = [w.append(trade(MIDNIGHT - 1, 3)), w.append(trade(MIDNIGHT, 4)), w.append(trade(MIDNIGHT + 1, 5))];
  t.same(
    (await Promise.all(ps)).map((r) => r.seq),
    [3, 4, 5],
    'one batch spanning midnight',
  );
  await w.close();
  t.same(await seqsAndDays(dir), [
    [1, '2026-10-02'],
    [2, '2026-10-02'],
    [3, '2026-10-02'],
    [4, '2026-10-03'],
    [5, '2026-10-03'],
  ]);
  // An empty newest day file (created, nothing written) falls back to the older day's last seq.
  writeFileSync(logFilePath(dir, key, '2026-10-05'), '');
  w = await openWriter(dir, key);
  t.equal(w.lastRecord()?.seq, 5, 'last seq found in an older day file');
  t.equal((await w.append(trade(MIDNIGHT + 3 * 86_400_000, 6))).seq, 6);
  await w.close();
  t.same(await listDays(dir, key), ['2026-10-02', '2026-10-03', '2026-10-05', '2026-10-06']);
});

t.test('a record older than the last one is refused and nothing is written', async (t) => {
  const dir = tmp(t);
  const w = await openWriter(dir, key, { fsyncIntervalMs: 1 });
  t.teardown(() => w.close());
  await w.append(trade(MIDNIGHT + 10, 1));
  const size = statSync(logFilePath(dir, key, '2026-10-03')).size;
  await t.rejects(w.append(trade(MIDNIGHT + 9, 2)), StorageError, 'older recv_ts');
  await t.rejects(w.append({ ...trade(MIDNIGHT + 11, 2), recv_ts: Number.NaN }), StorageError, 'NaN recv_ts');
  await t.rejects(w.append({ ...trade(MIDNIGHT + 11, 2), type: 'nonsense' } as unknown as Observation), StorageError, 'unknown type');
  await t.rejects(w.append({ ...trade(MIDNIGHT + 11, 2), source_ts: 1e300 }), StorageError, 'absurd source time');
  t.equal(statSync(logFilePath(dir, key, '2026-10-03')).size, size, 'the log did not change');
  t.equal((await w.append(trade(MIDNIGHT + 10, 2))).seq, 2, 'an equal time is fine and the seq has no hole');
});

t.test('group commit: appends resolve together once the batch is fsynced, at the record limit or on flush', async (t) => {
  const dir = tmp(t);
  const w = await openWriter(dir, key, { fsyncIntervalMs: 3_600_000, fsyncMaxRecords: 5 });
  t.teardown(() => w.close());
  const done: number[] = [];
  const ps = [1, 2, 3, 4].map((n) => w.append(trade(MIDNIGHT + n, n)).then((r) => done.push(r.seq)));
  await new Promise((r) => setTimeout(r, 100));
  t.same(done, [], 'nothing is acknowledged before the batch is due');
  t.same(await listDays(dir, key), [], 'and nothing is written yet');
  ps.push(w.append(trade(MIDNIGHT + 5, 5)).then((r) => done.push(r.seq)));
  await Promise.all(ps);
  t.same(done, [1, 2, 3, 4, 5], 'the fifth record completes the batch');
  const p6 = w.append(trade(MIDNIGHT + 6, 6));
  await w.flush();
  t.equal((await p6).seq, 6, 'flush() acknowledges what is pending');
  const bytes = readFileSync(logFilePath(dir, key, '2026-10-03'));
  t.ok(bytes.includes(Buffer.from('"price":"0.6"')), 'an acknowledged record is in the file');
});

t.test('backpressure is signalled beyond the high-water mark and drained() resolves after the write', async (t) => {
  const dir = tmp(t);
  const w = await openWriter(dir, key, { fsyncIntervalMs: 3_600_000, highWaterMarkBytes: 20_000 });
  t.teardown(() => w.close());
  t.equal(w.backpressure, false);
  const ps = [];
  let n = 0;
  while (!w.backpressure && n < 1000) ps.push(w.append(book(MIDNIGHT + n, ++n, 100)));
  t.ok(w.backpressure, `backpressure after ${n} big books`);
  await w.drained();
  t.equal(w.backpressure, false, 'drained');
  t.equal((await Promise.all(ps)).length, n);
  t.same((await seqsAndDays(dir)).length, n);
});

t.test('after close, appends are refused', async (t) => {
  const dir = tmp(t);
  const w = await openWriter(dir, key);
  await w.close();
  await t.rejects(w.append(trade(MIDNIGHT, 1)), StorageError);
});

t.test('a reader yields each day file in order, split at UTC midnight; listKeys finds every log', async (t) => {
  const dir = tmp(t);
  const other: LogKey = { family: 'yesno-exchange', stream: 'catalog', market: 'KX/1' };
  const w = await openWriter(dir, key, { fsyncIntervalMs: 0 });
  await Promise.all([1, 2, 3, 4].map((n) => w.append(trade(MIDNIGHT - 3 + n, n))));
  await w.close();
  await (await openWriter(dir, other)).close();
  const reader = openReader(dir, key);
  t.same(await reader.days(), ['2026-10-02', '2026-10-03']);
  const byDay: Record<string, number[]> = {};
  for await (const it of reader.read('start')) (byDay[it.pos.day] ??= []).push(it.rec.seq);
  t.same(byDay, { '2026-10-02': [1, 2], '2026-10-03': [3, 4] });
  t.same(await listKeys(dir), [key, other]);
});
