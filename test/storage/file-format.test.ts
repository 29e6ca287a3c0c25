// The day file's format header (log/file-header.ts) on real files: new files start with it and
// index their first frame after it; files written before it existed (no header, byte for byte as
// the old writer wrote them) still read, seek, recover, verify and take appends; a newer version is
// refused naming the file; a header torn by a crash is a file without records and is recovered.

import t, { type Test } from 'tap';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { logFilePath, indexFilePath, openReader, openWriter, verifyDataDir, type LogKey } from '../../src/storage/testing.js';
import { FILE_HEADER_BYTES, FORMAT_VERSION } from '../../src/storage/log/file-header.js';
import { encodeFrame, parseFrame } from '../../src/storage/log/frame.js';
import { decodeEntry, IndexEntries, ENTRY_BYTES } from '../../src/storage/log/time-index.js';
import { mixed } from './helpers/records.js';

const key: LogKey = { family: 'coin', stream: 'books', market: 'format/1' };
const DAY = '2026-10-02';
const T0 = Date.UTC(2026, 9, 2, 12);

function tmp(t: Test): string {
  const dir = mkdtempSync(join(tmpdir(), 'pmtape-format-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

async function seqs(dir: string): Promise<number[]> {
  const out: number[] = [];
  for await (const { rec } of openReader(dir, key).read('start')) out.push(rec.seq);
  return out;
}

/** A day file as the writer wrote it before the header existed: frames from byte 0, its index. */
function writeLegacy(dir: string, n: number): { log: Buffer; starts: number[] } {
  const frames: Buffer[] = [];
  const starts: number[] = [];
  const entries = new IndexEntries();
  let at = 0;
  for (let seq = 1; seq <= n; seq++) {
    const f = encodeFrame(mixed(T0 + seq * 10, seq), seq, seq % 50 === 0);
    const r = parseFrame(f, 0, at);
    if (r.status !== 'ok') throw new Error('frame');
    entries.consider(r.head, 4096);
    starts.push(at);
    frames.push(f);
    at += f.length;
  }
  const log = Buffer.concat(frames);
  const path = logFilePath(dir, key, DAY);
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, log);
  writeFileSync(indexFilePath(dir, key, DAY), entries.toBuffer());
  return { log, starts };
}

t.test('a new day file starts with the marker and its first frame and index entry follow it', async (t) => {
  const dir = tmp(t);
  const w = await openWriter(dir, key, { fsyncIntervalMs: 0 });
  for (let seq = 1; seq <= 5; seq++) await w.append(mixed(T0 + seq, seq));
  await w.close();
  const file = readFileSync(logFilePath(dir, key, DAY));
  t.equal(file.subarray(0, 6).toString('latin1'), 'PMTLOG');
  t.equal(file.readUInt16LE(6), FORMAT_VERSION);
  const first = parseFrame(file, FILE_HEADER_BYTES, FILE_HEADER_BYTES);
  t.equal(first.status === 'ok' && first.head.seq, 1, 'the first frame starts right after the header');
  const idx = readFileSync(indexFilePath(dir, key, DAY));
  t.equal(decodeEntry(idx, 0)?.offset, FILE_HEADER_BYTES, 'the first index entry points after the header');
  t.same(await seqs(dir), [1, 2, 3, 4, 5]);
  t.same(
    (await verifyDataDir(dir, { repair: false })).filter((c) => !c.ok),
    [],
  );
});

t.test('a legacy file (no header) reads, seeks, verifies, recovers and takes appends unchanged', async (t) => {
  const dir = tmp(t);
  const { log, starts } = writeLegacy(dir, 300);
  t.same(
    await seqs(dir),
    Array.from({ length: 300 }, (_, i) => i + 1),
    'reads every record',
  );
  const reader = openReader(dir, key);
  const pos = await reader.seekTime(T0 + 2000);
  t.same(pos && { offset: pos.offset, seq: pos.seq }, { offset: starts[199], seq: 200 }, 'seeks through its index to the right frame');
  t.same(
    (await verifyDataDir(dir, { repair: false })).filter((c) => !c.ok),
    [],
    'verify finds its index right',
  );
  // A torn last frame, as a crash leaves it: recovery cuts it; appends continue in legacy layout.
  const path = logFilePath(dir, key, DAY);
  truncateSync(path, log.length - 5);
  const w = await openWriter(dir, key, { fsyncIntervalMs: 0 });
  t.equal(w.lastRecord()?.seq, 299, 'recovered to the last whole frame');
  await w.append(mixed(T0 + 5000, 300));
  await w.close();
  const after = readFileSync(path);
  t.ok(after.subarray(0, starts[298]).equals(log.subarray(0, starts[298])), 'the bytes before the cut are untouched');
  t.not(after.subarray(0, 6).toString('latin1'), 'PMTLOG', 'no header is added to a legacy file');
  t.same(
    await seqs(dir),
    Array.from({ length: 300 }, (_, i) => i + 1),
  );
  t.same(
    (await verifyDataDir(dir, { repair: false })).filter((c) => !c.ok),
    [],
  );
});

t.test('a file of an unknown format version is refused with a message naming it, and left untouched', async (t) => {
  const dir = tmp(t);
  const w = await openWriter(dir, key, { fsyncIntervalMs: 0 });
  for (let seq = 1; seq <= 3; seq++) await w.append(mixed(T0 + seq, seq));
  await w.close();
  const path = logFilePath(dir, key, DAY);
  const bytes = readFileSync(path);
  bytes.writeUInt16LE(FORMAT_VERSION + 1, 6);
  writeFileSync(path, bytes);
  const message = new RegExp(`${path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} has log format version ${FORMAT_VERSION + 1}`);
  await t.rejects(seqs(dir), { message }, 'the reader refuses it');
  await t.rejects(openWriter(dir, key), { message }, 'the writer refuses to recover or append to it');
  const checks = await verifyDataDir(dir, { repair: true });
  const bad = checks.find((c) => c.file === path);
  t.match(bad, { ok: false, repaired: false, problem: message }, 'verify reports it and repairs nothing');
  t.ok(readFileSync(path).equals(bytes), 'not a byte changed');
});

t.test('a header torn by a crash is a file without records: readers see none, recovery and verify empty it', async (t) => {
  for (const cut of [3, 7, FILE_HEADER_BYTES - 1]) {
    const dir = tmp(t);
    const w = await openWriter(dir, key, { fsyncIntervalMs: 0 });
    await w.append(mixed(T0, 1));
    await w.close();
    const path = logFilePath(dir, key, DAY);
    truncateSync(path, cut);
    rmSync(indexFilePath(dir, key, DAY));
    t.same(await seqs(dir), [], `cut at ${cut}: a reader sees no record and does not fail`);
    const checks = await verifyDataDir(dir, { repair: false });
    t.match(
      checks.find((c) => c.file === path),
      { ok: false, problem: /torn file header/ },
      `cut at ${cut}: verify names it`,
    );
    const w2 = await openWriter(dir, key, { fsyncIntervalMs: 0 });
    t.equal(statSync(path).size, 0, `cut at ${cut}: recovery empties the file`);
    await w2.append(mixed(T0 + 10, 1));
    await w2.close();
    t.equal(readFileSync(path).subarray(0, 6).toString('latin1'), 'PMTLOG', 'the next append writes a whole header');
    t.same(await seqs(dir), [1]);
    t.same(
      (await verifyDataDir(dir, { repair: false })).filter((c) => !c.ok),
      [],
    );
  }
});

t.test('verify --repair empties a file whose header is torn', async (t) => {
  const dir = tmp(t);
  const w = await openWriter(dir, key, { fsyncIntervalMs: 0 });
  await w.append(mixed(T0, 1));
  await w.close();
  const path = logFilePath(dir, key, DAY);
  truncateSync(path, 9);
  const checks = await verifyDataDir(dir, { repair: true });
  t.match(
    checks.find((c) => c.file === path),
    { ok: false, repaired: true, damageOffset: 0 },
  );
  t.equal(statSync(path).size, 0);
  t.ok(existsSync(indexFilePath(dir, key, DAY)));
  t.equal(readFileSync(indexFilePath(dir, key, DAY)).length % ENTRY_BYTES, 0);
});
