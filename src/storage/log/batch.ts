// The pieces of group commit the writer is built from: arenas that frames are encoded into in
// place, runs of consecutive bytes (one writev entry each), the batch with its settle lists, and
// the file writes. Kept apart from append-log.ts so the writer itself reads as the protocol.

import type { FileHandle } from 'node:fs/promises';
import type { Observation, Recorded } from '../../schema/observation.js';
import type { Arena } from './codec.js';
import { diskFault, errnoError } from './disk-faults.js';

/** Consecutive regions of one buffer form one run: one writev entry, not one per record. */
export class Runs {
  readonly parts: Buffer[] = [];
  private buf: Buffer | null = null;
  private start = 0;
  private end = 0;

  add(buf: Buffer, at: number, size: number): void {
    if (buf === this.buf && at === this.end) {
      this.end += size;
      return;
    }
    this.close();
    this.buf = buf;
    this.start = at;
    this.end = at + size;
  }

  close(): void {
    if (this.buf) this.parts.push(this.buf.subarray(this.start, this.end));
    this.buf = null;
  }
}

/** Frames (and index entries) for one day file inside a batch. */
export interface Segment {
  readonly day: string;
  /** Logical file size before this segment's first frame. */
  readonly startOffset: number;
  /** Index file size before this segment's first entry (a failed batch is cut back to both). */
  readonly idxStart: number;
  readonly frames: Runs;
  readonly entries: Runs;
}

/**
 * Frames and index entries are encoded straight into big shared buffers; a batch writes slices of
 * them. Regions only ever move forward in a buffer, so bytes of a batch in flight are never reused.
 */
export class WriteArena implements Arena {
  buf = Buffer.allocUnsafeSlow(0);
  used = 0;
  /** Bytes the last batch took: a quiet market (most of them) keeps a small arena, a busy one grows. */
  hint = 0;

  constructor(
    private readonly min: number,
    private readonly max: number,
  ) {}

  ensure(size: number): void {
    if (this.buf.length - this.used >= size) return;
    const want = Math.min(this.max, Math.max(this.min, this.hint * 4));
    this.buf = Buffer.allocUnsafeSlow(Math.max(want, size));
    this.used = 0;
  }
}

export const ARENA_BYTES = 4 * 1024 * 1024;
export const MIN_ARENA_BYTES = 16 * 1024;

/**
 * One batch of group commit. Each append / appendMany / flush call is one entry of the parallel
 * settle arrays (no per-record closure or waiter object); the Recorded results are built only when
 * the batch is acknowledged, so nothing per record outlives the fsync except its bytes.
 */
export interface Batch {
  segments: Segment[];
  records: number;
  /** recv_ts (ms) of the batch's first record: where a refused batch's loss begins. */
  firstRecvMs: number;
  bytes: number;
  firstAt: number;
  resolves: Array<(v: unknown) => void>;
  rejects: Array<(e: Error) => void>;
  /** An entry's result: one record (seq in `seqs`), a group (seqs from `seqs` on), or none (flush). */
  values: Array<Observation | readonly Observation[] | undefined>;
  seqs: number[];
}

export const newBatch = (): Batch => ({
  segments: [],
  records: 0,
  firstRecvMs: 0,
  bytes: 0,
  firstAt: 0,
  resolves: [],
  rejects: [],
  values: [],
  seqs: [],
});

/**
 * `{ ...obs, seq }` falls off V8's fast clone path, once per record appended; assign-then-set stays
 * on it. Spread only for an own `__proto__` key, which assign would turn into a prototype.
 */
export function recordOf(obs: Observation, seq: number): Recorded {
  const r = (Object.hasOwn(obs, '__proto__') ? { ...obs } : Object.assign({}, obs)) as Recorded & { seq: number };
  r.seq = seq;
  return r;
}

export function settle(b: Batch): void {
  for (let i = 0; i < b.resolves.length; i++) {
    const v = b.values[i];
    if (v === undefined) b.resolves[i](undefined);
    else if (Array.isArray(v)) {
      const group = v as readonly Observation[];
      const seq0 = b.seqs[i];
      const out = new Array<Recorded>(group.length);
      for (let k = 0; k < group.length; k++) out[k] = recordOf(group[k], seq0 + k);
      b.resolves[i](out);
    } else b.resolves[i](recordOf(v as Observation, b.seqs[i]));
  }
}

export async function writeAll(fh: FileHandle, bufs: Buffer[], path: string): Promise<void> {
  const total = bufs.reduce((n, b) => n + b.length, 0);
  const injected = diskFault('write', path);
  if (injected) {
    // As a full disk does: part of the bytes land (a torn frame), then the write fails.
    const all = Buffer.concat(bufs);
    await fh.write(all, 0, Math.max(1, all.length >>> 1));
    throw errnoError(injected, 'write', path);
  }
  const { bytesWritten } = await fh.writev(bufs);
  if (bytesWritten === total) return;
  // A short write (rare on regular files): write the rest from one buffer.
  const all = Buffer.concat(bufs).subarray(bytesWritten);
  let done = 0;
  while (done < all.length) done += (await fh.write(all, done)).bytesWritten;
}
