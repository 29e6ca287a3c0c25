// One gzip member compressed on several threads at once (pigz's method): the text is cut into blocks
// of about a megabyte, each compressed by raw deflate on the libuv pool, primed with the 32 KiB of
// text before it (deflate's whole window, so the file is as small as one stream's) and ended by a
// sync flush instead of a final block; the blocks are written in order after a gzip header, then an
// empty final block and the trailer (the CRC-32 of the text, run over the blocks in order, and its
// length). A reader sees one ordinary member. One zlib stream compressed a Tardis file on a single
// pool thread, the stage the row writer waited on most (docs/tardis.md); this spreads it over the
// pool. At most IN_FLIGHT blocks wait at once: memory stays flat whatever the day's size.

import { constants, crc32, deflateRaw, type ZlibOptions } from 'node:zlib';

/**
 * Text gathered before a block is compressed, and the blocks compressed at once: three, so that
 * one of libuv's four pool threads stays free for the Parquet reads the decoding thread waits on.
 */
const BLOCK_BYTES = 1 << 20;
const IN_FLIGHT = 3;
/** Deflate's window: the text before a block that its compression may refer back to. */
const WINDOW = 32 * 1024;

/** gzip's header: magic, deflate, no flags, no time, "fastest" (level 1) or none, Unix. */
function header(level: number): Buffer {
  return Buffer.from([0x1f, 0x8b, 8, 0, 0, 0, 0, 0, level === 1 ? 4 : level === 9 ? 2 : 0, 3]);
}
/** A final fixed-Huffman block holding only its end code: the stream's last bits. */
const FINAL_BLOCK = Buffer.from([3, 0]);

function compress(block: Buffer, dictionary: Buffer | undefined, level: number): Promise<Buffer> {
  // An output chunk above a block's compressed size: one buffer per block, not one per 16 KiB.
  const o: ZlibOptions = { level, chunkSize: 1 << 17, finishFlush: constants.Z_SYNC_FLUSH, ...(dictionary ? { dictionary } : {}) };
  return new Promise((resolve, reject) => deflateRaw(block, o, (e, out) => (e ? reject(e) : resolve(out))));
}

interface Pending {
  readonly bytes: number;
  readonly out: Promise<Buffer>;
  done: boolean;
}

/**
 * The gzip file of `text` (one member), compressed at `level` on the thread pool. A large piece of
 * `text` is compressed as it is (no copy), small ones are gathered; `onConsumed` is told, in order,
 * how many bytes of `text` are compressed: the buffers holding them may be reused (text-out.ts).
 */
export async function* parallelGzip(
  text: AsyncIterable<Buffer>,
  level: number,
  onConsumed?: (bytes: number) => void,
): AsyncGenerator<Buffer> {
  yield header(level);
  let crc = 0;
  let length = 0;
  let window: Buffer | undefined;
  const pending: Pending[] = [];
  let parts: Buffer[] = [];
  let gathered = 0;

  const submit = (block: Buffer): void => {
    crc = crc32(block, crc);
    length += block.length;
    const p: Pending = { bytes: block.length, out: compress(block, window, level), done: false };
    void p.out.then(
      () => (p.done = true),
      () => (p.done = true),
    );
    pending.push(p);
    // The next block's dictionary: the last WINDOW bytes of the text so far (a copy: `block` is reused once compressed).
    window = block.length >= WINDOW ? Buffer.from(block.subarray(block.length - WINDOW)) : tail(window, block);
  };
  /**
   * The oldest block's bytes, once compressed: its text is given back (`onConsumed`) as they leave,
   * in order, as the writer of the text reuses its buffers by that count (text-out.ts).
   */
  const next = async (): Promise<Buffer> => {
    const p = pending.shift()!;
    const out = await p.out;
    onConsumed?.(p.bytes);
    return out;
  };
  /** Small pieces (the CSV's header, a file's last rows) are gathered into one block (a copy). */
  const flush = (): void => {
    if (gathered === 0) return;
    const block = Buffer.concat(parts, gathered);
    parts = [];
    gathered = 0;
    submit(block);
  };

  for await (const chunk of text) {
    if (chunk.length === 0) continue;
    if (gathered === 0 && chunk.length >= BLOCK_BYTES / 2) submit(chunk);
    else {
      parts.push(chunk);
      gathered += chunk.length;
      if (gathered >= BLOCK_BYTES / 2) flush();
    }
    // Blocks leave in order: the first whenever it is done, and always before more than IN_FLIGHT wait.
    while (pending.length > 0 && (pending[0].done || pending.length >= IN_FLIGHT)) yield await next();
  }
  flush();
  while (pending.length > 0) yield await next();
  const trailer = Buffer.alloc(8);
  trailer.writeUInt32LE(crc >>> 0, 0);
  trailer.writeUInt32LE(length % 2 ** 32, 4);
  yield Buffer.concat([FINAL_BLOCK, trailer]);
}

/** The last WINDOW bytes of `before` then `block` (a block shorter than the window). */
function tail(before: Buffer | undefined, block: Buffer): Buffer {
  const all = before ? Buffer.concat([before, block]) : Buffer.from(block);
  return all.length > WINDOW ? all.subarray(all.length - WINDOW) : all;
}
