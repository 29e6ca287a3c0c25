// A Parquet file as parquet-wasm reads it: `size` and `slice(a, b).arrayBuffer()`, the part of the
// `Blob` interface its reader uses. Node's own file-backed Blob (`openAsBlob`) streams every slice
// through a chunked reader, and the wasm reader asks for each column chunk and footer piece
// separately: a one-hour read of a compacted day made 44 reads, each a round trip through the
// thread pool, and waited on them for a quarter of its time. Here reads are served from aligned
// blocks, read once with one positioned read and shared by every reader of the process for the
// short while a decode needs them, so a footer and its row group's column chunks cost a read or two.

import { open as openFile, type FileHandle } from 'node:fs/promises';
import { LRUCache } from 'lru-cache';

/** Block size: a row group of a day's market (column chunks are contiguous) fits in one or two. */
const BLOCK = 512 * 1024;

/**
 * Raw blocks recently read, by file and block. Decoded row groups are cached above this (reader.ts);
 * these only have to outlive one decode, so the bound is small.
 */
const blocks = new LRUCache<string, Promise<Uint8Array>>({ maxSize: 32 * 1024 * 1024, sizeCalculation: () => BLOCK });

let nextFileId = 1;

/** Reads of the file system made through FileRanges so far (tests check that reads coalesce). */
export const fileReads = { count: 0, bytes: 0 };

async function readFully(fh: FileHandle, pos: number, len: number): Promise<Uint8Array> {
  const buf = new Uint8Array(len);
  let done = 0;
  while (done < len) {
    const { bytesRead } = await fh.read(buf, done, len - done, pos + done);
    if (bytesRead === 0) throw new Error(`unexpected end of file at byte ${pos + done}`);
    done += bytesRead;
  }
  fileReads.count++;
  fileReads.bytes += len;
  return buf;
}

/** One open file, or a byte range of it (what `slice` returns). */
export class FileRanges {
  private constructor(
    private readonly fh: FileHandle,
    private readonly id: number,
    private readonly fileSize: number,
    private readonly start: number,
    private readonly end: number,
  ) {}

  static async open(path: string): Promise<FileRanges> {
    const fh = await openFile(path, 'r');
    try {
      const size = (await fh.stat()).size;
      return new FileRanges(fh, nextFileId++, size, 0, size);
    } catch (e) {
      await fh.close();
      throw e;
    }
  }

  get size(): number {
    return this.end - this.start;
  }

  /** As `Blob.slice`: offsets relative to this range, clamped to it (negative ones are not used). */
  slice(a = 0, b = this.size): FileRanges {
    const start = Math.min(this.end, this.start + Math.max(0, a));
    const end = Math.max(start, Math.min(this.end, this.start + Math.max(0, b)));
    return new FileRanges(this.fh, this.id, this.fileSize, start, end);
  }

  private block(k: number): Promise<Uint8Array> {
    const key = `${this.id}:${k}`;
    let p = blocks.get(key);
    if (!p) {
      p = readFully(this.fh, k * BLOCK, Math.min(BLOCK, this.fileSize - k * BLOCK));
      blocks.set(key, p);
      p.catch(() => blocks.delete(key)); // a failed read is retried by the next caller
    }
    return p;
  }

  async arrayBuffer(): Promise<ArrayBuffer> {
    const out = new Uint8Array(this.end - this.start);
    if (out.length === 0) return out.buffer;
    const first = Math.floor(this.start / BLOCK);
    const last = Math.floor((this.end - 1) / BLOCK);
    const got = await Promise.all(Array.from({ length: last - first + 1 }, (_, i) => this.block(first + i)));
    got.forEach((b, i) => {
      const k = first + i;
      const from = Math.max(this.start, k * BLOCK) - k * BLOCK;
      const to = Math.min(this.end, (k + 1) * BLOCK) - k * BLOCK;
      out.set(b.subarray(from, to), k * BLOCK + from - this.start);
    });
    return out.buffer;
  }

  close(): Promise<void> {
    return this.fh.close();
  }
}
