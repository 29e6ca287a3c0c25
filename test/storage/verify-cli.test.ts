// `pmtape verify` as an operator runs it: exit 0 on a clean data dir, exit 1 naming each damaged
// file and offset, `--repair` fixes torn tails and stale indexes and exits 0, after which all is clean.

import t from 'tap';
import { spawnSync } from 'node:child_process';
import { appendFileSync, existsSync, mkdtempSync, readFileSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { indexFilePath, logFilePath, openWriter, type LogKey } from '../../src/storage/testing.js';
import { book, trade } from './helpers/records.js';
import { cliPath } from './helpers/proc.js';

const verify = (dir: string, ...args: string[]): { status: number | null; stdout: string } => {
  const r = spawnSync(process.execPath, [cliPath, 'verify', '--data-dir', dir, ...args], { encoding: 'utf8' });
  // Whatever went to stderr (a crash, a bad import) shows up in a failing assertion's diff.
  return { status: r.status, stdout: r.stdout + (r.stderr.includes('Error') ? `\nstderr: ${r.stderr}` : '') };
};

t.test('verify reports damage with file and offset, exits 1; --repair fixes it and exits 0', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'pmtape-verify-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const a: LogKey = { family: 'coin', stream: 'books', market: 'a' };
  const b: LogKey = { family: 'yesno-exchange', stream: 'metrics', market: 'b/1' };
  const T = Date.UTC(2026, 0, 5);
  for (const k of [a, b]) {
    const w = await openWriter(dir, k, { fsyncIntervalMs: 0 });
    await Promise.all(Array.from({ length: 200 }, (_, i) => w.append(i % 10 ? trade(T + i, i) : book(T + i, i, 20))));
    await w.close();
  }
  let r = verify(dir);
  t.equal(r.status, 0, 'a clean data dir passes');
  t.match(r.stdout, /4 files checked, no damage/);

  const logA = logFilePath(dir, a, '2026-01-05');
  const sizeA = readFileSync(logA).length;
  appendFileSync(logA, Buffer.from([40, 0, 0, 0, 1, 2, 3])); // a torn frame header
  const idxB = indexFilePath(dir, b, '2026-01-05');
  const goodIdx = readFileSync(idxB);
  unlinkSync(idxB);
  r = verify(dir);
  t.equal(r.status, 1, 'damage exits 1');
  t.match(
    r.stdout,
    new RegExp(`damaged: ${logA.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} at offset ${sizeA}: torn tail`),
    'names the log and the offset',
  );
  t.match(r.stdout, /damaged: .*b%2F1\/2026-01-05\.idx at offset 0: index missing/, 'names the missing index');

  r = verify(dir, '--repair');
  t.equal(r.status, 0, '--repair exits 0');
  t.match(r.stdout, /repaired: /);
  t.equal(readFileSync(logA).length, sizeA, 'the torn tail is gone');
  t.ok(readFileSync(idxB).equals(goodIdx), 'the index is rebuilt byte for byte');
  r = verify(dir);
  t.equal(r.status, 0, 'clean afterwards');

  const orphan = indexFilePath(dir, a, '2025-12-31');
  writeFileSync(orphan, goodIdx);
  r = verify(dir, '--repair');
  t.match(r.stdout, /repaired: .*2025-12-31\.idx: index without a log/, 'an index without its log is named and removed');
  t.equal(existsSync(orphan), false);

  writeFileSync(logA, Buffer.alloc(100, 0xff));
  r = verify(dir, '--data-dir', dir);
  t.equal(r.status, 1);
  t.match(r.stdout, /at offset 0: damaged frame: bad frame length/);
});

t.test('verify leaves the newest file of a live writer alone', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'pmtape-verify-live-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const k: LogKey = { family: 'coin', stream: 'books', market: 'live' };
  const w = await openWriter(dir, k, { fsyncIntervalMs: 0 });
  t.teardown(() => w.close());
  await w.append(trade(Date.UTC(2026, 0, 5), 1));
  const log = logFilePath(dir, k, '2026-01-05');
  appendFileSync(log, Buffer.from([40, 0, 0])); // as if a write were in progress
  const r = verify(dir, '--repair');
  t.equal(r.status, 0);
  t.equal(readFileSync(log).length % 1 === 0 && readFileSync(log).length > 3, true);
  t.match(r.stdout, /no damage/, 'an incomplete last frame under a live writer is a write in progress');
});
