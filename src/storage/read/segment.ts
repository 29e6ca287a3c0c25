// What a reader knows about one day file: its sparse index (the index file's valid prefix, extended
// by scanning the unindexed tail of the log) and where its valid frames end. Kept in an LRU bounded
// by bytes and refreshed incrementally as the file grows, so memory stays flat however big logs get.

import { open, stat, type FileHandle } from 'node:fs/promises';
import { LRUCache } from 'lru-cache';
import { scanFrames } from '../log/scan.js';
import { readFrameAt } from '../log/recovery.js';
import { indexPathOf } from '../paths.js';
import { readFileStart } from '../log/file-header.js';
import { DEFAULT_INDEX_EVERY_BYTES, IndexEntries, entryFlagsOf, parseIndex, type IndexEntry } from '../log/time-index.js';

export interface Segment {
  readonly path: string;
  ino: number;
  /** File size at the last refresh. */
  size: number;
  entries: IndexEntries;
  /** Bytes of the index file consumed; -1 once the index file proved wrong (scan only). */
  idxConsumed: number;
  /** The last entry read from the index file (continuity check for the next read). */
  idxLast: IndexEntry | null;
  /** End of the valid frames found so far (a frame boundary; 0 while the file holds none); entries are complete before it. */
  validEnd: number;
  /** The last valid frame, or seq -1 when the file has none. */
  lastSeq: number;
  lastRecvUs: number;
  lastOffset: number;
  /** Why the last scan stopped before the file's end ('bad' = damage, 'short' = growing/torn). */
  stopReason: 'eof' | 'short' | 'bad' | 'stopped';
}

const MIN_CACHE_BYTES = 1024 * 1024;
const newCache = (bytes: number): LRUCache<string, Segment> =>
  new LRUCache<string, Segment>({ maxSize: Math.max(MIN_CACHE_BYTES, bytes), sizeCalculation: (s) => s.entries.byteSize + 256 });
let cache = newCache(64 * 1024 * 1024);

/**
 * Sets the memory bound of the cached indexes (config `storage.indexCacheBytes`; at least 1 MiB).
 * Call it at startup: what is cached is dropped and rebuilt on demand.
 */
export function setIndexCacheBytes(bytes: number): void {
  if (cache.maxSize === Math.max(MIN_CACHE_BYTES, bytes)) return;
  cache = newCache(bytes);
}

/** The memory bound in force (for tests and diagnostics). */
export const indexCacheBytes = (): number => cache.maxSize;
/** Per file: the refresh running now, and the one queued to run after it. */
const running = new Map<string, Promise<Segment | null>>();
const queued = new Map<string, Promise<Segment | null>>();

/** Drops cached knowledge of a file (after it was truncated or rewritten by this process). */
export function forgetSegment(path: string): void {
  cache.delete(path);
}

/** The current view of the day file at `path`, or null when the file does not exist. */
export function segmentOf(path: string): Promise<Segment | null> {
  // A refresh that started before this call may miss a record the caller knows is written, so
  // callers arriving during one share the next refresh instead (at most one queued per file).
  const now = running.get(path);
  if (!now) return start(path);
  let next = queued.get(path);
  if (!next) {
    next = now
      .catch(() => null)
      .then(() => {
        queued.delete(path);
        return start(path);
      });
    queued.set(path, next);
  }
  return next;
}

function start(path: string): Promise<Segment | null> {
  const p = refresh(path).finally(() => {
    if (running.get(path) === p) running.delete(path);
  });
  running.set(path, p);
  return p;
}

async function refresh(path: string): Promise<Segment | null> {
  let st;
  try {
    st = await stat(path);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') {
      cache.delete(path);
      dropHandle(path);
      return null;
    }
    throw e;
  }
  const cached = cache.get(path);
  if (cached && cached.ino === st.ino && cached.size === st.size) return cached;
  if (cached && cached.ino !== st.ino) dropHandle(path);
  // Try in order: extend what we know; start over from the index file; start over from the log.
  const attempts: Array<() => Segment> = [];
  if (cached && cached.ino === st.ino && st.size > cached.size) {
    attempts.push(() => {
      cached.size = st.size;
      return cached;
    });
  }
  attempts.push(
    () => fresh(path, st.ino, st.size, true),
    () => fresh(path, st.ino, st.size, false),
  );
  for (const make of attempts) {
    const seg = make();
    if (await extend(seg)) {
      cache.set(path, seg);
      return seg;
    }
  }
  throw new Error(`cannot index ${path}`); // unreachable: a scan from byte 0 always succeeds
}

/** The bytes of `path` from `from` to its end (only what is new since the last read), or null. */
async function readFrom(path: string, from: number): Promise<Buffer | null | 'shrunk'> {
  let fh;
  try {
    fh = await open(path, 'r');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw e;
  }
  try {
    const size = (await fh.stat()).size;
    if (size < from) return 'shrunk';
    if (size === from) return null;
    const buf = Buffer.allocUnsafe(size - from);
    const { bytesRead } = await fh.read(buf, 0, buf.length, from);
    return buf.subarray(0, bytesRead);
  } finally {
    await fh.close();
  }
}

function fresh(path: string, ino: number, size: number, useIndex: boolean): Segment {
  const seg: Segment = {
    path,
    ino,
    size,
    entries: new IndexEntries(),
    idxConsumed: useIndex ? 0 : -1,
    idxLast: null,
    validEnd: 0,
    lastSeq: -1,
    lastRecvUs: -Infinity,
    lastOffset: -1,
    stopReason: 'eof',
  };
  return seg;
}

/**
 * Brings `seg` up to its file's current size: new index-file entries first (a cheap jump over
 * what the writer already indexed), then a scan of the rest. False when the index file lied.
 */
async function extend(seg: Segment): Promise<boolean> {
  const fh = await open(seg.path, 'r');
  try {
    // A fresh view checks the file's format header first (an unknown version throws, naming it).
    let dataStart = 0;
    if (seg.validEnd === 0 && seg.size > 0) {
      const fileStart = await readFileStart(fh, seg.size, seg.path);
      if (fileStart.kind === 'torn') {
        seg.stopReason = 'short'; // a writer creating the file, or one that died doing so: no record
        return true;
      }
      dataStart = fileStart.dataStart;
    }
    const e = seg.entries;
    if (seg.idxConsumed >= 0) {
      const buf = await readFrom(indexPathOf(seg.path), seg.idxConsumed);
      if (buf === 'shrunk') return false; // rewritten by a recovery since: start over from it
      if (buf && buf.length > 0) {
        const more = new IndexEntries();
        if (seg.idxLast) more.push(seg.idxLast); // continuity with what the file gave before
        const { accepted } = parseIndex(buf, more, seg.size);
        seg.idxConsumed += accepted;
        if (more.n > 0) seg.idxLast = more.get(more.n - 1);
        for (let i = 0; i < more.n; i++) if (more.offsets[i] > e.lastOffset) e.push(more.get(i));
      }
      if (e.n > 0 && e.lastOffset > seg.validEnd) {
        // Jump over what the writer indexed, if its last entry matches a frame (else: it lied).
        const f = await readFrameAt(fh, e.lastOffset, seg.size);
        const i = e.n - 1;
        if (!f || f.head.seq !== e.seqs[i] || f.head.recvUs !== e.times[i] || entryFlagsOf(f.head) !== e.flags[i]) return false;
        seg.validEnd = e.lastOffset;
        seg.lastOffset = -1; // the frame before the jump target is unknown: no order check across it
      }
    }
    // validEnd stays 0 while the file holds no frame (readers skip such a file), header or not.
    const from = seg.validEnd === 0 ? dataStart : seg.validEnd;
    if (from >= seg.size) return true;
    const prev = seg.lastOffset >= 0 ? { seq: seg.lastSeq, recvUs: seg.lastRecvUs } : null;
    const stop = await scanFrames(
      fh,
      from,
      seg.size,
      (head) => {
        e.consider(head, DEFAULT_INDEX_EVERY_BYTES);
        seg.lastSeq = head.seq;
        seg.lastRecvUs = head.recvUs;
        seg.lastOffset = head.offset;
      },
      prev,
      64 * 1024,
    );
    seg.validEnd = e.n > 0 ? stop.end : 0;
    seg.stopReason = stop.reason;
    return true;
  } finally {
    await fh.close();
  }
}

/** Open read handles shared by short lookups (a seek is then stat + read, not open/read/close). */
interface Handle {
  readonly fh: FileHandle;
  readonly ino: number;
  refs: number;
  lastUsed: number;
}
const handles = new Map<string, Handle>();
const MAX_IDLE_HANDLES = 64;
const IDLE_CLOSE_MS = 10_000;

/** Closes the shared handle of `path` if idle (its file was deleted or replaced). */
function dropHandle(path: string): void {
  const h = handles.get(path);
  if (h && h.refs === 0) {
    handles.delete(path);
    void h.fh.close().catch(() => undefined);
  }
}

// An open handle keeps a deleted file's space (retention deletes compacted logs): close idle ones.
setInterval(() => {
  const now = Date.now();
  for (const [p, h] of handles) if (h.refs === 0 && now - h.lastUsed > IDLE_CLOSE_MS) dropHandle(p);
}, IDLE_CLOSE_MS).unref();

/**
 * A read handle on `seg`'s file, shared with other lookups when one of the same inode is open;
 * call `release()` when done. Handles beyond MAX_IDLE_HANDLES are closed once idle, oldest first.
 */
export async function acquireFile(seg: Segment): Promise<{ fh: FileHandle; release: () => Promise<void> }> {
  let h = handles.get(seg.path);
  if (!h || h.ino !== seg.ino) {
    const fh = await open(seg.path, 'r');
    const ino = (await fh.stat()).ino;
    // The file was replaced since the segment was read: use this handle once, keep nothing.
    if (ino !== seg.ino) return { fh, release: () => fh.close() };
    const old = handles.get(seg.path);
    if (old && old.refs === 0) void old.fh.close().catch(() => undefined);
    h = { fh, ino, refs: 0, lastUsed: Date.now() };
  }
  handles.delete(seg.path); // (re-)insert: most recently used last
  handles.set(seg.path, h);
  const held = h;
  held.refs++;
  held.lastUsed = Date.now();
  let released = false;
  return {
    fh: held.fh,
    release: async () => {
      if (released) return;
      released = true;
      held.refs--;
      if (handles.get(seg.path) !== held && held.refs === 0) await held.fh.close().catch(() => undefined);
      if (handles.size > MAX_IDLE_HANDLES) {
        for (const [p, x] of handles) {
          if (handles.size <= MAX_IDLE_HANDLES) break;
          if (x.refs === 0) dropHandle(p);
        }
      }
    },
  };
}

/** Readers holding the shared handle of `path` now (tests check that a stopped pass let go). */
export function heldReaders(path: string): number {
  return handles.get(path)?.refs ?? 0;
}

/** Runs `fn` with a shared read handle on `seg`'s file (see acquireFile). */
export async function withFile<T>(seg: Segment, fn: (fh: FileHandle) => Promise<T>): Promise<T> {
  const { fh, release } = await acquireFile(seg);
  try {
    return await fn(fh);
  } finally {
    await release();
  }
}
