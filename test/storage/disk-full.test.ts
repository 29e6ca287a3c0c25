// A disk that refuses writes (ENOSPC, EDQUOT, EIO): the writer cuts the refused batch off its files
// (no partial frame stays, `verify` is clean without a restart), rejects it and everything queued
// behind it with DiskError, and takes appends again once the disk does, seq going on after the
// last acknowledged record. Injected faults run everywhere; as root the same runs on a real tmpfs
// that fills up.

import t, { type Test } from 'tap';
import { existsSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DiskError, StorageError } from '../../src/errors.js';
import { checkLogFile, listDays, logFilePath, openReader, openWriter, type LogKey } from '../../src/storage/testing.js';
import { injectDiskFault } from '../../src/storage/log/disk-faults.js';
import { book } from './helpers/records.js';
import { smallFs } from './helpers/small-fs.js';

const key: LogKey = { family: 'coin', stream: 'books', market: 'm-disk' };
const T0 = Date.UTC(2026, 9, 3, 12);

function tmp(t: Test): string {
  const dir = mkdtempSync(join(tmpdir(), 'pmtape-disk-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

async function seqs(dir: string): Promise<number[]> {
  const out: number[] = [];
  for await (const it of openReader(dir, key).read('start')) out.push(it.rec.seq);
  return out;
}

async function clean(t: Test, dir: string): Promise<void> {
  for (const day of await listDays(dir, key)) {
    const checks = await checkLogFile(logFilePath(dir, key, day), { repair: false });
    t.same(
      checks.filter((c) => !c.ok),
      [],
      `verify finds ${day} clean`,
    );
  }
}

t.teardown(() => injectDiskFault(null));

for (const op of ['write', 'sync'] as const) {
  for (const errno of ['ENOSPC', 'EIO']) {
    t.test(`${errno} on ${op}: the batch is cut off, the writer goes on after the last acknowledged record`, async (t) => {
      const dir = tmp(t);
      const w = await openWriter(dir, key, { fsyncIntervalMs: 5 });
      for (let i = 0; i < 20; i++) await w.append(book(T0 + i, i, 10));
      const path = logFilePath(dir, key, '2026-10-03');
      const before = statSync(path).size;
      injectDiskFault((o) => (o === op ? errno : null));
      const refused = await Promise.allSettled([20, 21, 22].map((i) => w.append(book(T0 + i, i, 10))));
      t.ok(
        refused.every((r) => r.status === 'rejected' && r.reason instanceof DiskError && r.reason.errno === errno),
        'every record of the batch is refused with DiskError',
      );
      t.equal(statSync(path).size, before, 'no byte of the refused batch stays');
      await clean(t, dir);
      injectDiskFault(null);
      const next = await w.append(book(T0 + 30, 30, 10));
      t.equal(next.seq, 21, 'seq goes on after the last acknowledged record');
      t.equal(w.lastRecord()?.seq, 21);
      await w.close();
      t.same(
        await seqs(dir),
        Array.from({ length: 21 }, (_, i) => i + 1),
        'every acknowledged record, nothing refused, no duplicate',
      );
      await clean(t, dir);
    });
  }
}

t.test('a refused batch that began a new day file removes that file; the old day is cut back', async (t) => {
  const dir = tmp(t);
  const midnight = Date.UTC(2026, 9, 4);
  const w = await openWriter(dir, key, { fsyncIntervalMs: 1000, fsyncMaxRecords: 1000 });
  await w.append(book(midnight - 100, 0, 5));
  await w.flush();
  const oldPath = logFilePath(dir, key, '2026-10-03');
  const oldSize = statSync(oldPath).size;
  injectDiskFault((op, path) => (op === 'write' && path.includes('2026-10-04') ? 'ENOSPC' : null));
  const ps = [w.append(book(midnight - 50, 1, 5)), w.append(book(midnight + 50, 2, 5))];
  void w.flush().catch(() => undefined);
  const out = await Promise.allSettled(ps);
  t.ok(
    out.every((r) => r.status === 'rejected' && r.reason instanceof DiskError),
    'both days of the batch are refused',
  );
  t.equal(statSync(oldPath).size, oldSize, 'the old day is cut back to its acknowledged end');
  t.notOk(existsSync(logFilePath(dir, key, '2026-10-04')), 'the day file the batch created is gone');
  injectDiskFault(null);
  t.equal((await w.append(book(midnight + 60, 3, 5))).seq, 2);
  await w.close();
  t.same(await seqs(dir), [1, 2]);
  await clean(t, dir);
});

t.test("an error that is not the disk's still fails the writer for good", async (t) => {
  const dir = tmp(t);
  const w = await openWriter(dir, key, { fsyncIntervalMs: 5 });
  await w.append(book(T0, 0, 3));
  injectDiskFault((op) => (op === 'sync' ? 'EBADF' : null));
  await t.rejects(w.append(book(T0 + 1, 1, 3)), StorageError);
  injectDiskFault(null);
  await t.rejects(w.append(book(T0 + 2, 2, 3)), /failed earlier/, 'reopen it');
  await w.close();
});

t.test(
  'a real filesystem that fills: the log ends at its last acknowledged frame, and the same writer goes on once room returns',
  async (t) => {
    const fs = smallFs(t, 4 * 1024 * 1024);
    if (!fs) {
      t.comment('skipped: needs root to mount a tmpfs (the injected faults above cover the same rules)');
      return;
    }
    const dir = join(fs, 'data');
    mkdirSync(dir);
    // Most of the filesystem taken by another file, as on a disk shared with other things.
    const filler = join(fs, 'filler');
    writeFileSync(filler, Buffer.alloc(3 * 1024 * 1024));
    const w = await openWriter(dir, key, { fsyncIntervalMs: 5 });
    let acked = 0;
    let refusal: unknown = null;
    for (let i = 0; i < 100_000 && refusal === null; i++) {
      try {
        await w.append(book(T0 + i, i, 100));
        acked++;
      } catch (e) {
        refusal = e;
      }
    }
    t.ok(refusal instanceof DiskError && refusal.errno === 'ENOSPC', `the disk filled after ${acked} records: ${String(refusal)}`);
    t.ok(acked > 10, 'records were written before it filled');
    await clean(t, dir);
    t.same(
      await seqs(dir),
      Array.from({ length: acked }, (_, i) => i + 1),
      'every acknowledged record is there, nothing after them',
    );
    await t.rejects(w.append(book(T0 + 200_000, 1, 100)), DiskError, 'still full: refused again');
    await clean(t, dir);
    rmSync(filler); // the operator frees space
    t.equal((await w.append(book(T0 + 300_000, 2, 100))).seq, acked + 1, 'the same writer goes on, seq after the last acknowledged');
    await w.close();
    t.same((await seqs(dir)).length, acked + 1);
    await clean(t, dir);
  },
);
