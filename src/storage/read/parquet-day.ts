// One day of a logical log served from its compacted Parquet partition. A position's offset is the
// row index within the market's day and its seq is authoritative, so cursors made on the log
// before compaction still land right. Segment statistics skip row groups a seek cannot hit.

import type { DecodedGroup, FileSegment, MarketDay } from '../parquet/reader.js';
import type { DaySource } from './log-day.js';
import { msToUs } from '../log/frame.js';
import type { Position, ReadItem, RecordChunk } from '../types.js';

/** forwardRecords hands out at most this many records at a time (a view on a decoded group). */
const RECORDS_CHUNK = 1024;

export class ParquetDay implements DaySource {
  constructor(private readonly md: MarketDay) {}

  get day(): string {
    return this.md.day;
  }

  private item(g: DecodedGroup, s: number, k: number): ReadItem {
    const seg = this.md.segments[s];
    return { rec: g.record(seg.start + k), pos: { day: this.md.day, offset: this.md.firstRow[s] + k, seq: g.seqs[seg.start + k] } };
  }

  /** The first row matching `rowOk` among segments passing `segOk`, as a position. */
  private async find(segOk: (s: FileSegment) => boolean, rowOk: (seq: number, recvUs: number) => boolean): Promise<Position | null> {
    const md = this.md;
    for (let s = 0; s < md.segments.length; s++) {
      const seg = md.segments[s];
      if (!segOk(seg)) continue;
      const g = await md.group(seg);
      for (let k = 0; k < seg.rows; k++) {
        const i = seg.start + k;
        if (rowOk(g.seqs[i], g.recvUs[i])) return { day: md.day, offset: md.firstRow[s] + k, seq: g.seqs[i] };
      }
    }
    return null;
  }

  seekTime(tUs: number): Promise<Position | null> {
    return this.find(
      (s) => s.maxRecv * 1000 >= tUs - 1,
      (_, r) => r >= tUs,
    );
  }

  seekSeq(s: number): Promise<Position | null> {
    return this.find(
      (g) => g.maxSeq >= s,
      (q) => q >= s,
    );
  }

  /** Offsets are not trusted here (a log cursor's byte offset means nothing in a partition). */
  holds(): Promise<boolean> {
    return Promise.resolve(false);
  }

  /** By seq: the first row at or after `before.seq` (an offset from a log cursor means nothing here). */
  boundOf(before: Position): Promise<Position | null> {
    return this.seekSeq(before.seq);
  }

  /** Segment index and row within it of the market-day row `row` (segments hold consecutive rows). */
  private locate(row: number): { s: number; k: number } {
    let s = this.md.firstRow.length - 1;
    while (s > 0 && this.md.firstRow[s] > row) s--;
    return { s, k: row - this.md.firstRow[s] };
  }

  /** Newest row (descending walk, flags only: no record is parsed) passing `ok`, with its group. */
  private async lastCheckpoint(
    segOk: (s: FileSegment) => boolean,
    ok: (seq: number, recvUs: number) => boolean,
  ): Promise<{ g: DecodedGroup; s: number; k: number } | null> {
    const md = this.md;
    for (let s = md.segments.length - 1; s >= 0; s--) {
      const seg = md.segments[s];
      if (!segOk(seg)) continue;
      const g = await md.group(seg);
      for (let k = seg.rows - 1; k >= 0; k--) {
        const i = seg.start + k;
        if (g.checkpoints[i] === 1 && ok(g.seqs[i], g.recvUs[i])) return { g, s, k };
      }
    }
    return null;
  }

  async checkpointBeforeSeq(s: number): Promise<Position | null> {
    const hit = await this.lastCheckpoint(
      (seg) => seg.minSeq < s,
      (q) => q < s,
    );
    return hit ? this.item(hit.g, hit.s, hit.k).pos : null;
  }

  async checkpointAtOrBefore(tUs: number): Promise<ReadItem | null> {
    const hit = await this.lastCheckpoint(
      (seg) => seg.minRecv * 1000 <= tUs + 1,
      (_, r) => r <= tUs,
    );
    return hit ? this.item(hit.g, hit.s, hit.k) : null;
  }

  async *forward(from: Position | null): AsyncGenerator<ReadItem> {
    const md = this.md;
    const start = from ? this.locate(from.offset) : { s: 0, k: 0 };
    for (let s = start.s; s < md.segments.length; s++) {
      const g = await md.group(md.segments[s]);
      for (let k = s === start.s ? start.k : 0; k < md.segments[s].rows; k++) yield this.item(g, s, k);
    }
  }

  async *forwardRecords(from: Position | null): AsyncGenerator<RecordChunk> {
    const md = this.md;
    const start = from ? this.locate(from.offset) : { s: 0, k: 0 };
    for (let s = start.s; s < md.segments.length; s++) {
      const seg = md.segments[s];
      const g = await md.group(seg);
      for (let k = s === start.s ? start.k : 0; k < seg.rows; k += RECORDS_CHUNK) {
        const first = seg.start + k;
        // The group's records are decoded once and cached (shared by every reader): a view on them.
        yield {
          length: Math.min(RECORDS_CHUNK, seg.rows - k),
          recvUs: (i) => msToUs(g.record(first + i).recv_ts),
          record: (i) => g.record(first + i),
        };
      }
    }
  }

  async *backward(before: Position | null): AsyncGenerator<ReadItem> {
    const md = this.md;
    const end = before ? Math.min(before.offset, md.rows) : md.rows;
    for (let s = md.segments.length - 1; s >= 0; s--) {
      if (md.firstRow[s] >= end) continue;
      const g = await md.group(md.segments[s]);
      for (let k = Math.min(md.segments[s].rows, end - md.firstRow[s]) - 1; k >= 0; k--) yield this.item(g, s, k);
    }
  }

  async latest(): Promise<ReadItem | null> {
    for await (const it of this.backward(null)) return it;
    return null;
  }
}
