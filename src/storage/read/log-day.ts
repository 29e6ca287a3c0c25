// One day of a logical log served from its append-log file: seeks through the sparse index (a
// binary search, then a forward scan of at most one index block), checkpoints by seq or time,
// and forward/backward passes that hold one shared file handle and release it when stopped early.

import type { FileHandle } from 'node:fs/promises';
import type { FrameHead } from '../log/frame.js';
import { readFrameAt } from '../log/recovery.js';
import { readFrameBlocks, readFrames, scanFrames } from '../log/scan.js';
import { acquireFile, segmentOf, withFile, type Segment } from './segment.js';
import type { Position, ReadItem, RecordChunk } from '../types.js';

const SEEK_CHUNK = 16 * 1024;
/** A forward pass decodes at most this much log ahead of its consumer (memory per open pass). */
export const PASS_CHUNK_MAX = 256 * 1024;
/**
 * forwardRecords reads this much log at a time, into a ring of three buffers per pass (scan.ts).
 * Its chunks keep bytes and decode a record when it is taken: decoded at once, 32 KiB of records
 * lived long enough to be promoted out of the young generation (a whole-day replay grew the
 * server's RSS: `npm run bench -- replay`), and smaller reads cost a thread-pool round trip per few
 * dozen records.
 */
const RECORDS_READ = 32 * 1024;

/** What a view needs of one day, whether it lives in a log file or a compacted partition. */
export interface DaySource {
  readonly day: string;
  /** The first record with recv time ≥ tUs in this day, or null. */
  seekTime(tUs: number): Promise<Position | null>;
  /** The first record with seq ≥ s in this day, or null. */
  seekSeq(s: number): Promise<Position | null>;
  /** True when a record with `pos.seq` starts at `pos.offset` (a cursor's fast path). */
  holds(pos: Position): Promise<boolean>;
  /** `before` as a bound for backward() in this day; null when every record of the day precedes it. */
  boundOf(before: Position): Promise<Position | null>;
  /** Where the newest checkpoint-marked record with seq < s starts, or null. */
  checkpointBeforeSeq(s: number): Promise<Position | null>;
  /** The newest checkpoint-marked record with recv time ≤ tUs, or null. */
  checkpointAtOrBefore(tUs: number): Promise<ReadItem | null>;
  /** Records from `from` (this day's start when null) on, ascending. */
  forward(from: Position | null): AsyncGenerator<ReadItem>;
  /** The records of forward() without positions, a chunk (one read, or part of a row group) at a time. */
  forwardRecords(from: Position | null): AsyncGenerator<RecordChunk>;
  /** Records strictly before `before` (the day's end when null), newest first. */
  backward(before: Position | null): AsyncGenerator<ReadItem>;
  /** The newest record of the day, or null. */
  latest(): Promise<ReadItem | null>;
}

/** Newest entry number among `e.checkpoints` whose seq is < s, or -1 (binary search). */
function lastCheckpointBeforeSeq(seg: Segment, s: number): number {
  const e = seg.entries;
  const cps = e.checkpoints;
  let lo = 0;
  let hi = cps.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (e.seqs[cps[mid]] < s && e.offsets[cps[mid]] < seg.validEnd) lo = mid + 1;
    else hi = mid;
  }
  return lo === 0 ? -1 : cps[lo - 1];
}

export class LogDay implements DaySource {
  constructor(
    readonly day: string,
    readonly path: string,
  ) {}

  /** The day file as it is now (a stat; the index is cached and extended as the file grows). */
  private async seg(): Promise<Segment | null> {
    const seg = await segmentOf(this.path);
    return seg && seg.validEnd > 0 ? seg : null;
  }

  async seekTime(tUs: number): Promise<Position | null> {
    const seg = await this.seg();
    if (!seg) return null;
    const e = seg.entries;
    // Last entry strictly before t: the answer lies between it and the next entry.
    return this.scanFor(seg, e.lastBefore(e.times, tUs, false), (h) => h.recvUs >= tUs);
  }

  async seekSeq(s: number): Promise<Position | null> {
    const seg = await this.seg();
    if (!seg || seg.lastSeq < s) return null;
    const e = seg.entries;
    return this.scanFor(seg, e.lastBefore(e.seqs, s, false), (h) => h.seq >= s);
  }

  /** Forward scan from entry `i` (or the file start) to the first frame matching `hit`. */
  private scanFor(seg: Segment, i: number, hit: (h: FrameHead) => boolean): Promise<Position | null> {
    const start = i >= 0 ? seg.entries.offsets[i] : 0;
    return withFile(seg, async (fh) => {
      let found: Position | null = null;
      await scanWith(fh, start, seg.validEnd, (h) => {
        if (!hit(h)) return true;
        found = { day: this.day, offset: h.offset, seq: h.seq };
        return false;
      });
      return found;
    });
  }

  async holds(pos: Position): Promise<boolean> {
    if (!Number.isSafeInteger(pos.offset) || pos.offset < 0) return false;
    const seg = await this.seg();
    if (!seg || pos.offset >= seg.validEnd) return false;
    const f = await withFile(seg, (fh) => readFrameAt(fh, pos.offset, seg.validEnd));
    return f !== null && f.head.seq === pos.seq;
  }

  /** A byte offset bounds a log day as it is (the old readers' rule: no frame check needed). */
  boundOf(before: Position): Promise<Position | null> {
    return Promise.resolve(before);
  }

  async checkpointBeforeSeq(s: number): Promise<Position | null> {
    const seg = await this.seg();
    if (!seg) return null;
    const j = lastCheckpointBeforeSeq(seg, s);
    return j < 0 ? null : { day: this.day, offset: seg.entries.offsets[j], seq: seg.entries.seqs[j] };
  }

  async checkpointAtOrBefore(tUs: number): Promise<ReadItem | null> {
    const seg = await this.seg();
    if (!seg) return null;
    const j = seg.entries.lastCheckpointAtOrBefore(tUs);
    return j >= 0 ? this.itemAt(seg, seg.entries.offsets[j]) : null;
  }

  async *forward(from: Position | null): AsyncGenerator<ReadItem> {
    const seg = await this.seg();
    if (!seg) return;
    const { fh, release } = await acquireFile(seg);
    try {
      for await (const { head, rec } of readFrames(fh, from ? from.offset : 0, seg.validEnd, undefined, 64 * 1024, PASS_CHUNK_MAX)) {
        yield { rec, pos: { day: this.day, offset: head.offset, seq: head.seq } };
      }
    } finally {
      await release();
    }
  }

  async *forwardRecords(from: Position | null): AsyncGenerator<RecordChunk> {
    const seg = await this.seg();
    if (!seg) return;
    const { fh, release } = await acquireFile(seg);
    try {
      yield* readFrameBlocks(fh, from ? from.offset : 0, seg.validEnd, RECORDS_READ);
    } finally {
      await release();
    }
  }

  async *backward(before: Position | null): AsyncGenerator<ReadItem> {
    const seg = await this.seg();
    if (!seg) return;
    let bound = before ? Math.min(before.offset, seg.validEnd) : seg.validEnd;
    const e = seg.entries;
    const { fh, release } = await acquireFile(seg);
    try {
      // Walk index blocks backwards: read one block forward, yield it reversed.
      let i = e.lastBefore(e.offsets, bound, false);
      while (i >= 0) {
        const block: ReadItem[] = [];
        for await (const { head, rec } of readFrames(fh, e.offsets[i], bound)) {
          block.push({ rec, pos: { day: this.day, offset: head.offset, seq: head.seq } });
        }
        for (let k = block.length - 1; k >= 0; k--) yield block[k];
        bound = e.offsets[i];
        i--;
      }
    } finally {
      await release();
    }
  }

  /** Where the newest record starts (one stat when the file is known), or null. */
  async latestPosition(): Promise<Position | null> {
    const seg = await this.seg();
    if (!seg) return null;
    if (seg.lastOffset >= 0) return { day: this.day, offset: seg.lastOffset, seq: seg.lastSeq };
    return (await this.latest())?.pos ?? null;
  }

  async latest(): Promise<ReadItem | null> {
    const seg = await this.seg();
    if (!seg) return null;
    const item = seg.lastOffset >= 0 ? await this.itemAt(seg, seg.lastOffset) : null;
    if (item) return item;
    for await (const it of this.backward(null)) return it;
    return null;
  }

  private async itemAt(seg: Segment, offset: number): Promise<ReadItem | null> {
    const f = await withFile(seg, (fh) => readFrameAt(fh, offset, seg.validEnd));
    return f ? { rec: f.rec(), pos: { day: this.day, offset, seq: f.head.seq } } : null;
  }
}

async function scanWith(fh: FileHandle, start: number, end: number, onFrame: (h: FrameHead) => boolean): Promise<void> {
  await scanFrames(fh, start, end, (h) => onFrame(h), null, SEEK_CHUNK);
}
