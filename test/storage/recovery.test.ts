// Torn tails and bit rot: truncate a log at every byte offset of its last frames and flip random
// bits; verify must name the damage and its offset, repair (and the writer's own recovery on open)
// must keep exactly the longest valid prefix, and the index must equal a rebuild from scratch.

import t from 'tap';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkLogFile, logFilePath, openReader, openWriter, verifyDataDir, type LogKey } from '../../src/storage/testing.js';
import { book, trade } from './helpers/records.js';

const key: LogKey = { family: 'yesno-exchange', stream: 'books', market: 'KXBTC15M-26MAR14-B' };
const T0 = Date.UTC(2026, 2, 14, 10);

/** Writes a log whose last three frames are small, returns its bytes, index and frame starts. */
async function fixture(dir: string): Promise<{ log: Buffer; idx: Buffer; starts: number[]; path: string }> {
  const w = await openWriter(dir, key, { fsyncIntervalMs: 1 });
  const ps = [];
  for (let n = 1; n <= 120; n++)
    ps.push(w.append(n <= 117 && n % 5 === 0 ? book(T0 + n, n, 20) : trade(T0 + n, n), { checkpoint: n % 25 === 0 }));
  await Promise.all(ps);
  await w.close();
  const path = logFilePath(dir, key, '2026-03-14');
  const starts: number[] = [];
  for await (const it of openReader(dir, key).read('start')) starts.push(it.pos.offset);
  return { log: readFileSync(path), idx: readFileSync(path.replace(/\.log$/, '.idx')), starts, path };
}

/** The original index's entries that point before `end`: what a rebuild of the prefix must give. */
function idxPrefix(idx: Buffer, end: number): Buffer {
  let n = 0;
  while (n * 32 < idx.length && idx.readUInt32LE(n * 32 + 16) + idx.readInt32LE(n * 32 + 20) * 2 ** 32 < end) n++;
  return idx.subarray(0, n * 32);
}

async function seqs(dir: string): Promise<number[]> {
  const out: number[] = [];
  for await (const it of openReader(dir, key).read('start')) out.push(it.rec.seq);
  return out;
}

const range = (a: number, b: number): number[] => Array.from({ length: b - a + 1 }, (_, i) => a + i);

t.test('a log cut at any byte of its last frames is detected, and repair keeps the longest valid prefix', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'pmtape-cut-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const { log, idx, starts, path } = await fixture(dir);
  const idxPath = path.replace(/\.log$/, '.idx');
  t.equal(starts.length, 120);
  const from = starts[starts.length - 3];
  let checked = 0;
  for (let cut = from; cut < log.length; cut++) {
    const kept = starts.filter((s, i) => (starts[i + 1] ?? log.length) <= cut).length; // whole frames before cut
    const boundary = kept === starts.length ? log.length : starts[kept];
    writeFileSync(path, log.subarray(0, cut));
    writeFileSync(idxPath, idx); // stale: may point past the cut
    const [logCheck] = await checkLogFile(path, { repair: false });
    if (cut === boundary) t.equal(logCheck.ok, true, `cut ${cut} on a frame boundary is a valid shorter log`);
    else if (!logCheck.ok && logCheck.damageOffset === boundary) checked++;
    else t.fail(`cut at ${cut}: expected damage at ${boundary}, got ${JSON.stringify(logCheck)}`);
    const repaired = await checkLogFile(path, { repair: true });
    if (cut !== boundary) t.equal(repaired[0].repaired, true);
    if (readFileSync(path).length !== boundary) t.fail(`cut ${cut}: repair left ${readFileSync(path).length} bytes, want ${boundary}`);
    if (!readFileSync(idxPath).equals(idxPrefix(idx, boundary))) t.fail(`cut ${cut}: index differs from a rebuild`);
    const again = await checkLogFile(path, { repair: false });
    if (!again.every((c) => c.ok)) t.fail(`cut ${cut}: still damaged after repair`);
  }
  t.equal(checked, log.length - from - 3, "every cut inside a frame was reported at that frame's start");
  t.same(await seqs(dir), range(1, 119), 'after the last cut, records 1..119 remain');
});

t.test('the writer recovers a torn tail on open and continues the seq after the last valid record', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'pmtape-open-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const { log, idx, starts, path } = await fixture(dir);
  const idxPath = path.replace(/\.log$/, '.idx');
  for (const cut of [starts[119] + 1, starts[119] + 9, starts[119] + 40, log.length - 1, starts[118] + 3]) {
    writeFileSync(path, log.subarray(0, cut));
    writeFileSync(idxPath, idx);
    const kept = starts.filter((s, i) => (starts[i + 1] ?? log.length) <= cut).length;
    const w = await openWriter(dir, key);
    t.equal(w.lastRecord()?.seq, kept, `cut ${cut}: last valid record is seq ${kept}`);
    t.equal(readFileSync(path).length, starts[kept], 'the torn frame was truncated');
    t.ok(readFileSync(idxPath).equals(idxPrefix(idx, starts[kept])), 'index trimmed to match');
    const rec = await w.append(trade(T0 + 500, 500));
    t.equal(rec.seq, kept + 1, 'the next append continues the seq');
    await w.close();
    t.same(await seqs(dir), range(1, kept + 1));
  }
});

t.test('random bit flips in a log are found at the damaged frame and repaired to the prefix before it', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'pmtape-flip-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const { log, idx, starts, path } = await fixture(dir);
  const idxPath = path.replace(/\.log$/, '.idx');
  for (let i = 0; i < 60; i++) {
    // Frames only: the file header before starts[0] has its own checksum and its own test below.
    const at = starts[0] + Math.floor(Math.random() * (log.length - starts[0]));
    const bad = Buffer.from(log);
    bad[at] ^= 1 << Math.floor(Math.random() * 8);
    writeFileSync(path, bad);
    writeFileSync(idxPath, idx);
    const frame = starts.filter((s) => s <= at).length - 1;
    const checks = await verifyDataDir(dir, { repair: false });
    const logCheck = checks.find((c) => c.file === path)!;
    t.equal(logCheck.ok, false, `flip at byte ${at} is detected`);
    t.equal(logCheck.damageOffset, starts[frame], `…at the start of frame ${frame}`);
    await verifyDataDir(dir, { repair: true });
    t.ok(readFileSync(path).equals(log.subarray(0, starts[frame])), 'repair keeps exactly the frames before it');
    t.ok(readFileSync(idxPath).equals(idxPrefix(idx, starts[frame])), 'and the index equals a rebuild');
  }
});

t.test('a bit flip in the file header is detected; past the magic, repair leaves the file untouched', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'pmtape-hdrflip-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const { log, idx, starts, path } = await fixture(dir);
  const idxPath = path.replace(/\.log$/, '.idx');
  t.equal(starts[0], 16, 'the first frame follows the 16-byte header');
  for (let at = 0; at < starts[0]; at++) {
    const bad = Buffer.from(log);
    bad[at] ^= 1 << (at % 8);
    writeFileSync(path, bad);
    writeFileSync(idxPath, idx);
    const check = (await verifyDataDir(dir, { repair: false })).find((c) => c.file === path)!;
    t.equal(check.ok, false, `flip at header byte ${at} is detected`);
    // A flip in the magic (bytes 0-5) makes the file read as a headerless legacy file whose first
    // frame is torn, which repair truncates like any torn frame. A flip in the version, flags or
    // checksum (6-15) may be a newer format: the file is refused and repair truncates nothing.
    if (at < 6) continue;
    await verifyDataDir(dir, { repair: true });
    t.ok(readFileSync(path).equals(bad), `repair leaves the file as it is (header byte ${at})`);
  }
});

t.test('a damaged or missing index is rebuilt: reads stay correct, repair restores it byte for byte', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'pmtape-idx-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const { idx, path } = await fixture(dir);
  const idxPath = path.replace(/\.log$/, '.idx');
  const backup = join(dir, 'idx.bak');
  copyFileSync(idxPath, backup);
  const expectSeek = await openReader(dir, key).seekTime(T0 + 77);
  t.equal(expectSeek?.seq, 77);
  for (let i = 0; i < 20; i++) {
    const bad = Buffer.from(idx);
    const at = Math.floor(Math.random() * bad.length);
    bad[at] ^= 1 << Math.floor(Math.random() * 8);
    writeFileSync(idxPath, bad);
    const checks = await checkLogFile(path, { repair: false });
    t.equal(checks[1].ok, false, `index flip at ${at} is detected`);
    t.equal(checks[1].damageOffset, at - (at % 32), 'at the damaged entry');
    // A reader in a fresh process state would see the bad index; the cache is keyed by log size, so
    // simulate a fresh reader by appending nothing and using a copy of the data dir.
    const copy = mkdtempSync(join(tmpdir(), 'pmtape-idxr-'));
    t.teardown(() => rmSync(copy, { recursive: true, force: true }));
    const cpath = logFilePath(copy, key, '2026-03-14');
    await openWriter(copy, key).then((w) => w.close());
    copyFileSync(path, cpath);
    writeFileSync(cpath.replace(/\.log$/, '.idx'), bad);
    const r = openReader(copy, key);
    t.same(await r.seekTime(T0 + 77), { ...expectSeek, day: '2026-03-14' }, 'seek is right despite the damaged index');
    t.equal((await r.checkpointAtOrBefore(T0 + 99))?.rec.seq, 75, 'as-of checkpoint lookup too');
    await checkLogFile(path, { repair: true });
    t.ok(readFileSync(idxPath).equals(idx), 'repair rewrites the index to match a rebuild');
  }
  unlinkSync(idxPath);
  const w = await openWriter(dir, key);
  await w.close();
  t.ok(readFileSync(idxPath).equals(idx), 'a missing index is rebuilt by the writer on open');
});
