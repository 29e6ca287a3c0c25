// Reads one logical log across its day files: seeks by time or seq through the sparse index,
// forward and backward iteration, latest/first, and as-of checkpoints. Safe in another process
// than the writer: only complete, checksummed frames are ever returned.

import type { FileHandle } from 'node:fs/promises';
import { dayStartMs, utcDay } from '../../schema/time.js';
import { msToUs, type FrameHead } from '../log/frame.js';
import { listDays, logFilePath } from '../paths.js';
import { readFrameAt } from '../log/recovery.js';
import { readFrames, scanFrames } from './scan.js';
import { acquireFile, segmentOf, withFile, type Segment } from './segment.js';
import { followLog } from './follow.js';
import type { LogKey, LogReader, Position, ReadItem, ReadOptions } from '../types.js';

const SEEK_CHUNK = 16 * 1024;

export class FileLogReader implements LogReader {
  constructor(readonly dataDir: string, readonly key: LogKey) {}

  days(): Promise<string[]> {
    return listDays(this.dataDir, this.key);
  }

  path(day: string): string {
    return logFilePath(this.dataDir, this.key, day);
  }

  segment(day: string): Promise<Segment | null> {
    return segmentOf(this.path(day));
  }

  async seekTime(t: number): Promise<Position | null> {
    if (!Number.isFinite(t)) return null;
    const tUs = msToUs(t);
    const tDay = t < 0 ? '0000-00-00' : utcDay(Math.min(t, 8.64e15));
    for (const day of await this.days()) {
      if (day < tDay) continue;
      const seg = await this.segment(day);
      if (!seg || seg.validEnd === 0) continue;
      const e = seg.entries;
      // Last entry strictly before t: the answer lies between it and the next entry.
      const i = day === tDay ? e.lastBefore(e.times, tUs, false) : -1;
      const pos = await this.scanFor(day, seg, i, (h) => h.recvUs >= tUs);
      if (pos) return pos;
    }
    return null;
  }

  async seekSeq(s: number): Promise<Position | null> {
    if (Number.isNaN(s)) return null;
    for (const day of await this.days()) {
      const seg = await this.segment(day);
      if (!seg || seg.validEnd === 0 || seg.lastSeq < s) continue;
      const e = seg.entries;
      const pos = await this.scanFor(day, seg, e.lastBefore(e.seqs, s, false), (h) => h.seq >= s);
      if (pos) return pos;
    }
    return null;
  }

  /** Forward scan from entry `i` (or the file start) to the first frame matching `hit`. */
  private async scanFor(day: string, seg: Segment, i: number, hit: (h: FrameHead) => boolean): Promise<Position | null> {
    const e = seg.entries;
    const start = i >= 0 ? e.offsets[i] : 0;
    return withFile(seg, async (fh) => {
      let found: Position | null = null;
      await scanWith(fh, start, seg.validEnd, (h) => {
        if (!hit(h)) return true;
        found = { day, offset: h.offset, seq: h.seq };
        return false;
      });
      return found;
    });
  }

  /** The start position of a read: `from` itself when a frame with its seq is there, else by seq. */
  async resolve(from: Position | 'start'): Promise<Position | null> {
    if (from === 'start') {
      for (const day of await this.days()) {
        const seg = await this.segment(day);
        if (seg && seg.validEnd > 0) return { day, offset: 0, seq: seg.entries.seqs[0] };
      }
      return null;
    }
    if (dayStartMs(from.day) !== null && Number.isSafeInteger(from.offset) && from.offset >= 0) {
      const seg = await this.segment(from.day);
      if (seg && from.offset < seg.validEnd) {
        const f = await withFile(seg, (fh) => readFrameAt(fh, from.offset, seg.validEnd));
        if (f && f.head.seq === from.seq) return from;
      }
    }
    return this.seekSeq(from.seq);
  }

  async *read(from: Position | 'start', opts: ReadOptions = {}): AsyncIterable<ReadItem> {
    let left = opts.limit ?? Infinity;
    if (left <= 0) return;
    const start = await this.resolve(from);
    if (!start) return;
    const endUs = opts.endTime === undefined ? Infinity : msToUs(opts.endTime);
    for (const day of await this.days()) {
      if (day < start.day) continue;
      const seg = await this.segment(day);
      if (!seg || seg.validEnd === 0) continue;
      const { fh, release } = await acquireFile(seg);
      try {
        for await (const { head, rec } of readFrames(fh, day === start.day ? start.offset : 0, seg.validEnd)) {
          if (head.recvUs >= endUs) return;
          yield { rec, pos: { day, offset: head.offset, seq: head.seq } };
          if (--left <= 0) return;
        }
      } finally {
        await release();
      }
    }
  }

  async *readBackward(
    before: Position | 'end',
    opts: { readonly startTime?: number; readonly limit?: number } = {},
  ): AsyncIterable<ReadItem> {
    let left = opts.limit ?? Infinity;
    if (left <= 0) return;
    const startUs = opts.startTime === undefined ? -Infinity : msToUs(opts.startTime);
    const days = (await this.days()).reverse();
    for (const day of days) {
      if (before !== 'end' && day > before.day) continue;
      const seg = await this.segment(day);
      if (!seg || seg.validEnd === 0) continue;
      let bound = before !== 'end' && day === before.day ? Math.min(before.offset, seg.validEnd) : seg.validEnd;
      const e = seg.entries;
      const { fh, release } = await acquireFile(seg);
      try {
        // Walk index blocks backwards: read one block forward, yield it reversed.
        let i = e.lastBefore(e.offsets, bound, false);
        while (i >= 0) {
          const block: ReadItem[] = [];
          for await (const { head, rec } of readFrames(fh, e.offsets[i], bound)) {
            block.push({ rec, pos: { day, offset: head.offset, seq: head.seq } });
          }
          for (let k = block.length - 1; k >= 0; k--) {
            if (msToUs(block[k].rec.recv_ts) < startUs) return;
            yield block[k];
            if (--left <= 0) return;
          }
          bound = e.offsets[i];
          i--;
        }
      } finally {
        await release();
      }
    }
  }

  async latest(): Promise<ReadItem | null> {
    for (const day of (await this.days()).reverse()) {
      const item = await this.latestIn(day);
      if (item) return item;
    }
    return null;
  }

  async latestPosition(): Promise<Position | null> {
    for (const day of (await this.days()).reverse()) {
      const pos = await this.latestPositionIn(day);
      if (pos) return pos;
    }
    return null;
  }

  /** Where the newest record of one day file starts (one stat when the file is known), or null. */
  async latestPositionIn(day: string): Promise<Position | null> {
    const seg = await this.segment(day);
    if (!seg || seg.validEnd === 0) return null;
    if (seg.lastOffset >= 0) return { day, offset: seg.lastOffset, seq: seg.lastSeq };
    return (await this.latestIn(day))?.pos ?? null;
  }

  /** The newest record of one day file (one stat and one frame read when the file is known), or null. */
  async latestIn(day: string): Promise<ReadItem | null> {
    const seg = await this.segment(day);
    if (!seg || seg.validEnd === 0) return null;
    const item = await this.itemAt(day, seg, seg.lastOffset >= 0 ? seg.lastOffset : -1);
    if (item) return item;
    for await (const it of this.readBackward({ day, offset: seg.validEnd, seq: Infinity }, { limit: 1 })) return it;
    return null;
  }

  async first(): Promise<ReadItem | null> {
    for await (const item of this.read('start', { limit: 1 })) return item;
    return null;
  }

  async checkpointAtOrBefore(t: number): Promise<ReadItem | null> {
    if (Number.isNaN(t)) return null;
    const tUs = msToUs(t);
    for (const day of (await this.days()).reverse()) {
      const dayStart = dayStartMs(day)!;
      if (dayStart > t) continue;
      const seg = await this.segment(day);
      if (!seg || seg.validEnd === 0) continue;
      const j = seg.entries.lastCheckpointAtOrBefore(tUs);
      if (j >= 0) return this.itemAt(day, seg, seg.entries.offsets[j]);
    }
    return null;
  }

  private async itemAt(day: string, seg: Segment, offset: number): Promise<ReadItem | null> {
    if (offset < 0) return null;
    const f = await withFile(seg, (fh) => readFrameAt(fh, offset, seg.validEnd));
    return f ? { rec: f.rec(), pos: { day, offset, seq: f.head.seq } } : null;
  }

  follow(from: Position | 'start' | 'end', signal: AbortSignal): AsyncIterable<ReadItem> {
    return followLog(this, from, signal);
  }
}

async function scanWith(fh: FileHandle, start: number, end: number, onFrame: (h: FrameHead) => boolean): Promise<void> {
  await scanFrames(fh, start, end, (h) => onFrame(h), null, SEEK_CHUNK);
}

export function openLogReader(dataDir: string, key: LogKey): FileLogReader {
  return new FileLogReader(dataDir, key);
}
