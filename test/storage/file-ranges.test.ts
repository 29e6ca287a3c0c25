// The Blob-shaped view parquet-wasm reads files through: every slice reads back the file's own bytes,
// nearby reads share one read of the file system, and a file shorter than it was says so.

import t, { type Test } from 'tap';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, readdir, readlink, rename, rm, truncate, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FileRanges, cachedBlocks, fileReads, openFiles, setMaxOpenFiles } from '../../src/storage/parquet/file-ranges.js';
import { ParquetFileReader, encodeParquet } from '../../src/storage/parquet/file.js';
import type { ColumnSpec } from '../../src/storage/parquet/columns.js';

/** A file of `bytes` random bytes in a fresh folder, opened; both gone when the test ends. */
async function randomFile(t: Test, bytes: number): Promise<{ dir: string; path: string; data: Buffer; f: FileRanges }> {
  const dir = await mkdtemp(join(tmpdir(), 'pmtape-ranges-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const path = join(dir, 'f.bin');
  const data = randomBytes(bytes);
  await writeFile(path, data);
  const f = await FileRanges.open(path);
  t.teardown(() => f.close());
  return { dir, path, data, f };
}

t.test('slices read back exactly the bytes of the file', async (t) => {
  // Past two 512 KiB blocks, not a multiple of one.
  const { data: bytes, f } = await randomFile(t, 1_300_000 + 17);
  t.equal(f.size, bytes.length, 'size');
  let x = 7;
  const rnd = (n: number): number => (x = (x * 1103515245 + 12345) % 2147483648) % n;
  for (let k = 0; k < 300; k++) {
    const a = rnd(bytes.length + 10);
    const b = a + rnd(700_000);
    const got = Buffer.from(await f.slice(a, b).arrayBuffer());
    if (!got.equals(bytes.subarray(a, b))) {
      t.fail(`slice(${a}, ${b}) differs`);
      return;
    }
  }
  t.pass('300 random slices, across block edges and past the end, equal the file');
  const inner = f.slice(1000, 600_000).slice(10, 20);
  t.same(Buffer.from(await inner.arrayBuffer()), bytes.subarray(1010, 1020), 'a slice of a slice is relative to it');
  t.equal((await f.slice(5, 5).arrayBuffer()).byteLength, 0, 'an empty slice');
});

t.test('reads of one region share a read of the file system', async (t) => {
  const { dir, f } = await randomFile(t, 200_000);
  const before = fileReads.count;
  await Promise.all([f.slice(0, 10).arrayBuffer(), f.slice(100, 5000).arrayBuffer(), f.slice(199_990, 200_000).arrayBuffer()]);
  await f.slice(50_000, 60_000).arrayBuffer();
  t.equal(fileReads.count - before, 1, 'four reads of a 200 kB file, one read of the file system');

  // A Parquet file read through it: the footer and a row group's column chunks come from one block.
  const specs: ColumnSpec[] = [
    { name: 'seq', kind: 'int64', nullable: false, delta: true, doc: '' },
    { name: 'price', kind: 'f64', nullable: true, doc: '' },
    { name: 'side', kind: 'utf8', nullable: false, doc: '' },
  ];
  const n = 20_000;
  const pq = join(dir, 'f.parquet');
  await writeFile(
    pq,
    encodeParquet(
      specs,
      [
        Array.from({ length: n }, (_, i) => i + 1),
        Array.from({ length: n }, (_, i) => (i % 7 ? i / 100 : null)),
        Array.from({ length: n }, (_, i) => (i % 2 ? 'bid' : 'ask')),
      ],
      { rowGroupRows: 4096, metadata: new Map() },
    ),
  );
  const size = (await readFile(pq)).length;
  t.ok(size < 512 * 1024, `${size} bytes: one block`);
  const r0 = fileReads.count;
  const reader = await ParquetFileReader.open(pq);
  t.teardown(() => reader.close());
  const rows = await reader.readRows(2, 100, 50);
  t.equal(rows.numRows, 50);
  t.equal(Number(rows.getChild('seq')!.get(0)), 2 * 4096 + 101, 'the rows asked for');
  t.equal(fileReads.count - r0, 1, 'opening the file and reading rows of a row group: one read');
});

t.test('closing a file forgets its blocks', async (t) => {
  // A reopened file gets a new id, so the closed one's blocks could never be read again.
  const { path, data } = await randomFile(t, 1_200_000);
  const f = await FileRanges.open(path);
  const before = cachedBlocks();
  t.same(Buffer.from(await f.slice(0, 1_100_000).arrayBuffer()), data.subarray(0, 1_100_000));
  t.equal(cachedBlocks() - before, 3, 'three 512 KiB blocks kept while the file is open');
  await f.close();
  t.equal(cachedBlocks(), before, 'none after it is closed');
});

t.test('a file that became shorter is an error, not short data', async (t) => {
  const { path, f } = await randomFile(t, 100_000);
  await truncate(path, 40_000);
  await t.rejects(f.slice(50_000, 60_000).arrayBuffer(), /unexpected end of file/);
});

/** Descriptors this process has open on files under `dir`. */
async function fdsUnder(dir: string): Promise<number> {
  let n = 0;
  for (const fd of await readdir('/proc/self/fd')) {
    const target = await readlink(`/proc/self/fd/${fd}`).catch(() => '');
    if (target.startsWith(dir)) n++;
  }
  return n;
}

t.test('open descriptors stay within the bound, and evicted files read on', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'pmtape-ranges-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  setMaxOpenFiles(4);
  t.teardown(() => setMaxOpenFiles(256));
  const files: { f: FileRanges; data: Buffer }[] = [];
  for (let i = 0; i < 12; i++) {
    const data = randomBytes(3 * 512 * 1024 + i); // three blocks and a bit: each read below is a new block
    await writeFile(join(dir, `f${i}.bin`), data);
    files.push({ f: await FileRanges.open(join(dir, `f${i}.bin`)), data });
  }
  t.teardown(() => Promise.all(files.map((x) => x.f.close())));
  let most = 0;
  for (let round = 0; round < 3; round++) {
    for (const { f, data } of files) {
      const a = round * 512 * 1024 + 100;
      const got = Buffer.from(await f.slice(a, a + 1000).arrayBuffer());
      if (!got.equals(data.subarray(a, a + 1000))) t.fail(`round ${round}: wrong bytes`);
      most = Math.max(most, openFiles());
    }
  }
  t.ok(most <= 4, `at most ${most} descriptors held by 12 files read in turn`);
  await new Promise((r) => setTimeout(r, 50)); // closes of evicted descriptors complete
  const fds = await fdsUnder(dir);
  t.ok(fds <= 4, `${fds} descriptors open on the folder`);
});

t.test('a file replaced after its descriptor was evicted is refused, not misread', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'pmtape-ranges-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  setMaxOpenFiles(1);
  t.teardown(() => setMaxOpenFiles(256));
  await writeFile(join(dir, 'a.bin'), randomBytes(2 * 512 * 1024));
  await writeFile(join(dir, 'b.bin'), randomBytes(1000));
  const a = await FileRanges.open(join(dir, 'a.bin'));
  t.teardown(() => a.close());
  await a.slice(0, 10).arrayBuffer(); // block 0 read while a's descriptor is open
  const b = await FileRanges.open(join(dir, 'b.bin')); // evicts a's descriptor
  t.teardown(() => b.close());
  await writeFile(join(dir, 'a2.bin'), randomBytes(2 * 512 * 1024));
  await rename(join(dir, 'a2.bin'), join(dir, 'a.bin'));
  await t.rejects(a.slice(600_000, 600_010).arrayBuffer(), /changed since it was opened/, 'another file now: refused');
  t.equal((await a.slice(0, 10).arrayBuffer()).byteLength, 10, 'a block read before still serves');
});
