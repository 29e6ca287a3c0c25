// The sparse time index of one day file: fixed 32-byte entries (recv µs, seq, offset, flags, CRC-32C)
// for the first frame, every frame ≥ `everyBytes` after the previous entry, and every checkpoint.
// The rule is deterministic, so a rebuild from the log reproduces exactly what the writer wrote.

import { crc32c } from '@node-rs/crc32';
import { isFirstFrameOffset } from './file-header.js';
import { FLAG_CHECKPOINT, readI64, writeI64, type FrameHead } from './frame.js';

export const ENTRY_BYTES = 32;
export const DEFAULT_INDEX_EVERY_BYTES = 4096;
export const ENTRY_CHECKPOINT = 1;

export interface IndexEntry {
  readonly recvUs: number;
  readonly seq: number;
  readonly offset: number;
  readonly flags: number;
}

export function encodeEntry(e: IndexEntry, buf: Buffer = Buffer.allocUnsafe(ENTRY_BYTES), at = 0): Buffer {
  encodeEntryAt(buf, at, e.recvUs, e.seq, e.offset, e.flags);
  return buf;
}

/** encodeEntry without an entry object (the writer's hot path). */
export function encodeEntryAt(buf: Buffer, at: number, recvUs: number, seq: number, offset: number, flags: number): void {
  writeI64(buf, recvUs, at);
  writeI64(buf, seq, at + 8);
  writeI64(buf, offset, at + 16);
  buf.writeUInt32LE(flags, at + 24);
  buf.writeUInt32LE(crc32c(buf.subarray(at, at + 28)), at + 28);
}

/** The entry at `buf[at]`, or null when its checksum does not match. */
export function decodeEntry(buf: Buffer, at: number): IndexEntry | null {
  if (crc32c(buf.subarray(at, at + 28)) !== buf.readUInt32LE(at + 28)) return null;
  return { recvUs: readI64(buf, at), seq: readI64(buf, at + 8), offset: readI64(buf, at + 16), flags: buf.readUInt32LE(at + 24) };
}

export const entryFlagsOf = (head: FrameHead): number => (head.flags & FLAG_CHECKPOINT ? ENTRY_CHECKPOINT : 0);

/** Growable columnar entries: 25 bytes per entry in memory, binary-searchable. */
export class IndexEntries {
  n = 0;
  times: Float64Array;
  seqs: Float64Array;
  offsets: Float64Array;
  flags: Uint8Array;
  /** Entry numbers of checkpoint-marked entries, ascending (as-of reads binary-search these). */
  checkpoints: number[] = [];

  constructor(capacity = 64) {
    this.times = new Float64Array(capacity);
    this.seqs = new Float64Array(capacity);
    this.offsets = new Float64Array(capacity);
    this.flags = new Uint8Array(capacity);
  }

  get byteSize(): number {
    return this.times.length * 25 + this.checkpoints.length * 8;
  }

  get lastOffset(): number {
    return this.n === 0 ? -1 : this.offsets[this.n - 1];
  }

  push(e: IndexEntry): void {
    if (this.n === this.times.length) {
      const cap = this.n * 2;
      const grow = <T extends Float64Array | Uint8Array>(a: T, make: (c: number) => T): T => {
        const b = make(cap);
        b.set(a);
        return b;
      };
      this.times = grow(this.times, (c) => new Float64Array(c));
      this.seqs = grow(this.seqs, (c) => new Float64Array(c));
      this.offsets = grow(this.offsets, (c) => new Float64Array(c));
      this.flags = grow(this.flags, (c) => new Uint8Array(c));
    }
    this.times[this.n] = e.recvUs;
    this.seqs[this.n] = e.seq;
    this.offsets[this.n] = e.offset;
    this.flags[this.n] = e.flags;
    if (e.flags & ENTRY_CHECKPOINT) this.checkpoints.push(this.n);
    this.n++;
  }

  get(i: number): IndexEntry {
    return { recvUs: this.times[i], seq: this.seqs[i], offset: this.offsets[i], flags: this.flags[i] };
  }

  /** Whether the frame `head` gets an entry under the rule, given the entries so far. */
  wants(head: FrameHead, everyBytes: number): boolean {
    if (this.n === 0) return true;
    if (head.offset <= this.lastOffset) return false;
    return (head.flags & FLAG_CHECKPOINT) !== 0 || head.offset - this.lastOffset >= everyBytes;
  }

  /** Adds the frame's entry if the rule wants one; returns it (or null). */
  consider(head: FrameHead, everyBytes: number): IndexEntry | null {
    if (!this.wants(head, everyBytes)) return null;
    const e = { recvUs: head.recvUs, seq: head.seq, offset: head.offset, flags: entryFlagsOf(head) };
    this.push(e);
    return e;
  }

  /** Index of the last entry whose column value is < v (or ≤ v when `inclusive`), or -1. */
  lastBefore(column: Float64Array, v: number, inclusive: boolean): number {
    let lo = 0;
    let hi = this.n; // invariant: answer in [lo - 1, hi - 1]
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const x = column[mid];
      if (x < v || (inclusive && x === v)) lo = mid + 1;
      else hi = mid;
    }
    return lo - 1;
  }

  /** Drops entries at or beyond `offset` (after a log truncation). */
  trimTo(offset: number): void {
    while (this.n > 0 && this.offsets[this.n - 1] >= offset) this.pop();
  }

  pop(): void {
    this.n--;
    if (this.checkpoints.length > 0 && this.checkpoints[this.checkpoints.length - 1] === this.n) this.checkpoints.pop();
  }

  /** Entry number of the newest checkpoint entry with time ≤ tUs, or -1. */
  lastCheckpointAtOrBefore(tUs: number): number {
    const cps = this.checkpoints;
    let lo = 0;
    let hi = cps.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.times[cps[mid]] <= tUs) lo = mid + 1;
      else hi = mid;
    }
    return lo === 0 ? -1 : cps[lo - 1];
  }

  toBuffer(): Buffer {
    const buf = Buffer.allocUnsafe(this.n * ENTRY_BYTES);
    for (let i = 0; i < this.n; i++) encodeEntry(this.get(i), buf, i * ENTRY_BYTES);
    return buf;
  }
}

/**
 * Parses index file bytes into entries, keeping the valid prefix: stops at the first entry with a
 * bad checksum, at one that does not move forward, or at one pointing at/after `logEnd`.
 * Returns how many bytes were accepted and whether everything was.
 */
export function parseIndex(buf: Buffer, into: IndexEntries, logEnd: number): { accepted: number; clean: boolean } {
  const whole = buf.length - (buf.length % ENTRY_BYTES);
  let at = 0;
  for (; at < whole; at += ENTRY_BYTES) {
    const e = decodeEntry(buf, at);
    if (e === null || e.offset >= logEnd || e.offset < 0) break;
    if (into.n > 0) {
      const i = into.n - 1;
      if (e.offset <= into.offsets[i] || e.seq <= into.seqs[i] || e.recvUs < into.times[i]) break;
    } else if (!isFirstFrameOffset(e.offset)) break;
    into.push(e);
  }
  return { accepted: at, clean: at === buf.length };
}
