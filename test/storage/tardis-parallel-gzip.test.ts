// The Tardis files' gzip compressed on several pool threads (src/storage/tardis/parallel-gzip.ts) is
// one ordinary gzip member: its deflate stream alone (between the header and the trailer) inflates
// to the whole text, its trailer holds the text's CRC-32 and length, and it is about as small as one
// zlib stream's output (each block primed with the text before it). The text's buffers are given back
// only once compressed: a writer that overwrites them as soon as it may still gets its text back.
// Memory stays bounded: the text read ahead of what has left is a few blocks, whatever the length.

import t from 'tap';
import { crc32, gunzipSync, gzipSync, inflateRawSync } from 'node:zlib';
import { parallelGzip } from '../../src/storage/tardis/parallel-gzip.js';
import { rng } from '../../tools/fixtures/compaction-logs.js';

/** CSV-like text: repeated leading cells, varying numbers (compresses about as the files do). */
function csv(bytes: number, seed = 1): Buffer {
  const r = rng(seed);
  const lines: string[] = [];
  let n = 0;
  let ts = 1_764_000_000_000_000;
  while (n < bytes) {
    ts += Math.floor(r() * 5000);
    const line = `pmtape-clob,50000-UP,${ts},${ts + 123},${r() < 0.1 ? 'true' : 'false'},${r() < 0.5 ? 'bid' : 'ask'},0.${Math.floor(r() * 999) + 1},${Math.round(r() * 5000) / 10}\n`;
    lines.push(line);
    n += line.length;
  }
  return Buffer.from(lines.join('')).subarray(0, bytes);
}

async function* pieces(text: Buffer, sizes: readonly number[]): AsyncGenerator<Buffer> {
  let at = 0;
  for (let k = 0; at < text.length; k++) {
    const n = sizes[k % sizes.length];
    yield text.subarray(at, at + n);
    at += n;
  }
}

async function gzipOf(src: AsyncIterable<Buffer>, onConsumed?: (n: number) => void): Promise<Buffer> {
  const out: Buffer[] = [];
  for await (const b of parallelGzip(src, 1, onConsumed)) out.push(b);
  return Buffer.concat(out);
}

t.test('one member: the deflate stream alone inflates to the text; CRC-32 and length in the trailer', async (t) => {
  const text = csv(9 * (1 << 20) + 12_345);
  // A small header first, then pieces large and small (a large piece is a block as it is).
  const gz = await gzipOf(pieces(text, [120, 1 << 20, 1 << 20, 300_000, 700_000, 5_000, 1 << 20]));
  t.same([...gz.subarray(0, 4)], [0x1f, 0x8b, 8, 0], 'gzip magic, deflate, no flags');
  t.ok(gunzipSync(gz).equals(text), 'gunzip gives the text back');
  t.ok(inflateRawSync(gz.subarray(10, gz.length - 8)).equals(text), 'one deflate stream: no second member inside');
  t.equal(gz.readUInt32LE(gz.length - 8), crc32(text) >>> 0, 'CRC-32 of the whole text');
  t.equal(gz.readUInt32LE(gz.length - 4), text.length, 'ISIZE');
  const single = gzipSync(text, { level: 1 }).length;
  t.ok(gz.length < single * 1.02, `as small as one stream (${gz.length} against ${single} bytes)`);
});

t.test('no text, and text smaller than a block, are valid files too', async (t) => {
  t.equal(gunzipSync(await gzipOf(pieces(Buffer.alloc(0), [1]))).length, 0);
  const small = csv(777);
  t.ok(gunzipSync(await gzipOf(pieces(small, [100]))).equals(small));
});

t.test('a buffer given back is no longer read: overwriting it at once leaves the file intact', async (t) => {
  const text = csv(12 * (1 << 20), 3);
  const CHUNK = 1 << 20;
  let consumed = 0;
  const lent: { buf: Buffer; end: number }[] = [];
  let taken = 0;
  let reused = 0;
  async function* writer(): AsyncGenerator<Buffer> {
    for (let at = 0; at < text.length; at += CHUNK) {
      const part = text.subarray(at, at + CHUNK);
      // The oldest buffer once its bytes are consumed (filled with garbage first, to be sure), else a new one.
      let buf: Buffer;
      if (lent.length > 0 && lent[0].end <= consumed) {
        buf = lent.shift()!.buf;
        buf.fill(0x5a);
        reused++;
      } else buf = Buffer.alloc(CHUNK);
      part.copy(buf);
      const out = buf.subarray(0, part.length);
      taken += part.length;
      lent.push({ buf, end: taken });
      yield out;
    }
  }
  const gz = await gzipOf(writer(), (n) => (consumed += n));
  t.ok(reused > 3, `buffers were reused (${reused})`);
  t.equal(consumed, text.length, 'every byte given back');
  t.ok(gunzipSync(gz).equals(text), 'the file is the text');
});

t.test('text read ahead of the compressed bytes that left stays a few blocks', async (t) => {
  const text = csv(24 * (1 << 20), 5);
  let pulled = 0;
  async function* src(): AsyncGenerator<Buffer> {
    for await (const p of pieces(text, [1 << 20])) {
      pulled += p.length;
      yield p;
    }
  }
  let consumed = 0;
  let most = 0;
  for await (const b of parallelGzip(src(), 1, (n) => (consumed += n))) {
    void b;
    most = Math.max(most, pulled - consumed);
  }
  t.ok(most <= 6 * (1 << 20), `at most ${most} bytes of text held at once`);
});
