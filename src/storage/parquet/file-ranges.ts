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

/** An open descriptor, with the reads in flight on it (it is closed only when none is). */
interface Handle {
  readonly fh: FileHandle;
  busy: number;
  retired: boolean;
}

/**
 * Descriptors of the files being read, at most `maxOpen` at a time: a server that has read many
 * compacted days would otherwise hold one per part file it ever opened. An evicted file is opened
 * again on its next read, and refused if it is no longer the file that was opened (another inode,
 * size or mtime: a partition replaced under a reader that still has its old footer).
 */
let maxOpen = 256;
// The bound is kept by `remember` (so tests can lower it); the cache's own bound is never reached.
// It is a `maxSize`, not a `max`: lru-cache preallocates its arrays for `max` entries, and
// `max: 1 << 20` made every process that loaded this module pay for those arrays at import.
const handles = new LRUCache<number, Promise<Handle>>({
  maxSize: 1 << 20,
  sizeCalculation: () => 1,
  dispose: (p) => void p.then(retire, () => undefined),
});

function remember(id: number, p: Promise<Handle>): void {
  while (handles.size >= maxOpen) void handles.pop(); // the least recently used: `dispose` closes it once idle
  handles.set(id, p);
}

function retire(h: Handle): void {
  h.retired = true;
  if (h.busy === 0) void h.fh.close().catch(() => undefined);
}

/** Changes the bound on open descriptors (tests use a small one). */
export function setMaxOpenFiles(n: number): void {
  maxOpen = n;
  while (handles.size > maxOpen) void handles.pop(); // `dispose` closes each once idle
}

/** Descriptors open through FileRanges now. */
export const openFiles = (): number => handles.size;

/** Blocks kept now (tests: a closed file leaves none). */
export const cachedBlocks = (): number => blocks.size;

interface Identity {
  readonly ino: number;
  readonly size: number;
  readonly mtimeMs: number;
}

async function openChecked(path: string, want: Identity | null): Promise<{ h: Handle; id: Identity }> {
  const fh = await openFile(path, 'r');
  try {
    const st = await fh.stat();
    const id = { ino: st.ino, size: st.size, mtimeMs: st.mtimeMs };
    if (want && (id.ino !== want.ino || id.size !== want.size || id.mtimeMs !== want.mtimeMs)) {
      throw new Error(`${path} changed since it was opened (a partition replaced while it was read); read it again`);
    }
    return { h: { fh, busy: 0, retired: false }, id };
  } catch (e) {
    await fh.close();
    throw e;
  }
}

/** One open file, or a byte range of it (what `slice` returns). */
export class FileRanges {
  private constructor(
    private readonly path: string,
    private readonly identity: Identity,
    private readonly id: number,
    private readonly start: number,
    private readonly end: number,
  ) {}

  static async open(path: string): Promise<FileRanges> {
    const { h, id } = await openChecked(path, null);
    const f = new FileRanges(path, id, nextFileId++, 0, id.size);
    remember(f.id, Promise.resolve(h));
    return f;
  }

  get size(): number {
    return this.end - this.start;
  }

  /** As `Blob.slice`: offsets relative to this range, clamped to it (negative ones are not used). */
  slice(a = 0, b = this.size): FileRanges {
    const start = Math.min(this.end, this.start + Math.max(0, a));
    const end = Math.max(start, Math.min(this.end, this.start + Math.max(0, b)));
    return new FileRanges(this.path, this.identity, this.id, start, end);
  }

  /** Runs `fn` on this file's descriptor, opening it again if it was evicted. */
  private async withHandle<T>(fn: (fh: FileHandle) => Promise<T>): Promise<T> {
    let p = handles.get(this.id);
    if (!p) {
      p = openChecked(this.path, this.identity).then(({ h }) => h);
      remember(this.id, p);
      p.catch(() => handles.delete(this.id));
    }
    const h = await p;
    h.busy++;
    try {
      return await fn(h.fh);
    } finally {
      h.busy--;
      if (h.retired && h.busy === 0) void h.fh.close().catch(() => undefined);
    }
  }

  private block(k: number): Promise<Uint8Array> {
    const key = `${this.id}:${k}`;
    let p = blocks.get(key);
    if (!p) {
      p = this.withHandle((fh) => readFully(fh, k * BLOCK, Math.min(BLOCK, this.identity.size - k * BLOCK)));
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

  /**
   * Closes the descriptor (once no read is using it) and forgets the file's blocks: a later open
   * gets a new id, so they could never be read again and would only hold memory until evicted.
   */
  async close(): Promise<void> {
    handles.delete(this.id);
    const prefix = `${this.id}:`;
    for (const key of [...blocks.keys()]) if (key.startsWith(prefix)) blocks.delete(key);
  }
}
