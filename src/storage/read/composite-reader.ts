// One logical log across live log days and compacted Parquet days, behind the same LogReader
// interface: each day is served from its log file while that exists, else from its partition.
// In a compacted day a position's offset is the row index of the market's day and its seq is
// authoritative, so cursors made before compaction keep working after the log is deleted.

import { DAY_MS, dayStartMs, utcDay } from '../../schema/time.js';
import { msToUs } from '../log/frame.js';
import { listDays } from '../paths.js';
import { parquetStore, type MarketDay, type ParquetStore } from '../parquet/reader.js';
import type { Stream as Dataset } from '../parquet/schema.js';
import type { FileLogReader } from './reader.js';
import type { LogKey, LogReader, Position, ReadItem, ReadOptions } from '../types.js';

type Plan = { day: string; pq: MarketDay | null }[];
const END_OF_DAY = Number.MAX_SAFE_INTEGER;

export class CompositeReader implements LogReader {
  private readonly store: ParquetStore;
  private readonly dataset: Dataset;

  /** The log day the last `latest()` found its record in (a hint for the next call). */
  private latestDay: string | null = null;

  constructor(readonly dataDir: string, readonly key: LogKey, private readonly log: FileLogReader, store?: ParquetStore) {
    this.store = store ?? parquetStore(dataDir);
    this.dataset = key.stream;
  }

  /** Days ascending; a day without a log file but with a published partition row is served from Parquet. */
  private async plan(): Promise<Plan> {
    const logDays = await listDays(this.dataDir, this.key);
    const have = new Set(logDays);
    const plan: Plan = logDays.map((day) => ({ day, pq: null }));
    for (const day of await this.store.dates(this.key.family, this.dataset)) {
      if (have.has(day)) continue;
      const pq = await this.store.marketDay(this.key.family, this.dataset, day, this.key.market);
      if (pq) plan.push({ day, pq });
    }
    return plan.sort((a, b) => (a.day < b.day ? -1 : a.day > b.day ? 1 : 0));
  }

  async days(): Promise<string[]> {
    return (await this.plan()).map((p) => p.day);
  }

  /** Rows of a compacted day from row `from` on (ascending), with their positions. */
  private async *rows(md: MarketDay, from = 0): AsyncGenerator<{ item: ReadItem; recvUs: number; checkpoint: boolean }> {
    for (let s = 0; s < md.segments.length; s++) {
      const seg = md.segments[s];
      if (md.firstRow[s] + seg.rows <= from) continue;
      const g = await md.group(seg);
      for (let k = Math.max(0, from - md.firstRow[s]); k < seg.rows; k++) {
        const i = seg.start + k;
        yield { item: { rec: g.record(i), pos: { day: md.day, offset: md.firstRow[s] + k, seq: g.seqs[i] } }, recvUs: g.recvUs[i], checkpoint: g.checkpoints[i] === 1 };
      }
    }
  }

  /** Rows of a compacted day before row `before` (descending). */
  private async *rowsBack(md: MarketDay, before = md.rows): AsyncGenerator<{ item: ReadItem; recvUs: number; checkpoint: boolean }> {
    for (let s = md.segments.length - 1; s >= 0; s--) {
      const seg = md.segments[s];
      if (md.firstRow[s] >= before) continue;
      const g = await md.group(seg);
      for (let k = Math.min(seg.rows, before - md.firstRow[s]) - 1; k >= 0; k--) {
        const i = seg.start + k;
        yield { item: { rec: g.record(i), pos: { day: md.day, offset: md.firstRow[s] + k, seq: g.seqs[i] } }, recvUs: g.recvUs[i], checkpoint: g.checkpoints[i] === 1 };
      }
    }
  }

  /** First row index of a compacted day matching `hit` on its segment ranges, then per row. */
  private async findRow(md: MarketDay, segOk: (s: MarketDay['segments'][number]) => boolean, rowOk: (seq: number, recvUs: number) => boolean): Promise<number | null> {
    for (let s = 0; s < md.segments.length; s++) {
      const seg = md.segments[s];
      if (!segOk(seg)) continue;
      const g = await md.group(seg);
      for (let k = 0; k < seg.rows; k++) if (rowOk(g.seqs[seg.start + k], g.recvUs[seg.start + k])) return md.firstRow[s] + k;
    }
    return null;
  }

  private posAt(md: MarketDay, row: number | null): Promise<Position | null> {
    if (row === null) return Promise.resolve(null);
    let s = md.firstRow.length - 1;
    while (s > 0 && md.firstRow[s] > row) s--;
    const seg = md.segments[s];
    return md.group(seg).then((g) => ({ day: md.day, offset: row, seq: g.seqs[seg.start + row - md.firstRow[s]] }));
  }

  async seekTime(t: number): Promise<Position | null> {
    if (!Number.isFinite(t)) return null;
    const tUs = msToUs(t);
    const tDay = t < 0 ? '0000-00-00' : utcDay(Math.min(t, 8.64e15));
    for (const { day, pq } of await this.plan()) {
      if (day < tDay) continue;
      if (pq) {
        const p = await this.posAt(pq, await this.findRow(pq, (s) => s.maxRecv * 1000 >= tUs - 1, (_, r) => r >= tUs));
        if (p) return p;
      } else {
        const p = await this.log.seekTime(Math.max(t, dayStartMs(day)!));
        if (p && p.day === day) return p;
      }
    }
    return null;
  }

  async seekSeq(s: number): Promise<Position | null> {
    if (Number.isNaN(s)) return null;
    for (const { day, pq } of await this.plan()) {
      if (pq) {
        const p = await this.posAt(pq, await this.findRow(pq, (g) => g.maxSeq >= s, (q) => q >= s));
        if (p) return p;
      } else {
        const p = await this.log.seekSeq(s);
        if (p && p.day === day) return p;
      }
    }
    return null;
  }

  async *read(from: Position | 'start', opts: ReadOptions = {}): AsyncIterable<ReadItem> {
    let left = opts.limit ?? Infinity;
    if (left <= 0) return;
    const plan = await this.plan();
    if (plan.every((p) => !p.pq)) {
      yield* this.log.read(from, opts); // the common case: nothing compacted away
      return;
    }
    const endUs = opts.endTime === undefined ? Infinity : msToUs(opts.endTime);
    const fromSeq = from === 'start' ? -Infinity : from.seq;
    for (const { day, pq } of plan) {
      if (from !== 'start' && day < from.day && !pq) continue;
      if (pq) {
        // Seq is authoritative (a cursor made on the log before compaction still lands right).
        const row = fromSeq === -Infinity ? 0 : await this.findRow(pq, (g) => g.maxSeq >= fromSeq, (q) => q >= fromSeq);
        if (row === null) continue;
        for await (const { item, recvUs } of this.rows(pq, row)) {
          if (recvUs >= endUs) return;
          yield item;
          if (--left <= 0) return;
        }
        continue;
      }
      const start = from !== 'start' && from.day === day ? from : await this.log.seekTime(dayStartMs(day)!);
      if (!start || start.day !== day) continue;
      for await (const item of this.log.read(start, { endTime: opts.endTime, limit: left })) {
        if (item.pos.day !== day) break;
        if (item.pos.seq < fromSeq) continue;
        yield item;
        if (--left <= 0) return;
      }
    }
  }

  async *readBackward(before: Position | 'end', opts: { readonly startTime?: number; readonly limit?: number } = {}): AsyncIterable<ReadItem> {
    let left = opts.limit ?? Infinity;
    if (left <= 0) return;
    const plan = await this.plan();
    if (plan.every((p) => !p.pq)) {
      yield* this.log.readBackward(before, opts);
      return;
    }
    const startUs = opts.startTime === undefined ? -Infinity : msToUs(opts.startTime);
    const beforeSeq = before === 'end' ? Infinity : before.seq;
    for (const { day, pq } of plan.reverse()) {
      if (before !== 'end' && day > before.day) continue;
      if (startUs !== -Infinity && (dayStartMs(day)! + DAY_MS) * 1000 <= startUs) return;
      if (pq) {
        for await (const { item, recvUs } of this.rowsBack(pq)) {
          if (item.pos.seq >= beforeSeq) continue;
          if (recvUs < startUs) return;
          yield item;
          if (--left <= 0) return;
        }
        continue;
      }
      const bound: Position = before !== 'end' && before.day === day ? before : { day, offset: END_OF_DAY, seq: Infinity };
      for await (const item of this.log.readBackward(bound, { startTime: opts.startTime, limit: left })) {
        if (item.pos.day !== day) break;
        yield item;
        if (--left <= 0) return;
      }
    }
  }

  /**
   * Fast path for the hot "latest book" reads: when the newest day holding records is today's log
   * day, nothing newer can be in another file (records are filed by receive time, and writers on
   * this machine never stamp one ahead of this clock), so that file alone answers, without listing
   * days or partitions. Null: take the full path.
   */
  private today(): string | null {
    const hint = this.latestDay;
    return hint !== null && hint === utcDay(Date.now()) ? hint : null;
  }

  async latestPosition(): Promise<Position | null> {
    const today = this.today();
    if (today !== null) {
      const pos = await this.log.latestPositionIn(today);
      if (pos) return pos;
    }
    return (await this.latest())?.pos ?? null;
  }

  async latest(): Promise<ReadItem | null> {
    const today = this.today();
    if (today !== null) {
      const item = await this.log.latestIn(today);
      if (item) return item;
    }
    for (const { day, pq } of (await this.plan()).reverse()) {
      if (pq) {
        for await (const { item } of this.rowsBack(pq)) return item;
        continue;
      }
      const item = await this.log.latestIn(day);
      if (item) {
        this.latestDay = day;
        return item;
      }
    }
    return null;
  }

  async first(): Promise<ReadItem | null> {
    for await (const item of this.read('start', { limit: 1 })) return item;
    return null;
  }

  async checkpointAtOrBefore(t: number): Promise<ReadItem | null> {
    if (Number.isNaN(t)) return null;
    const tUs = msToUs(t);
    for (const { day, pq } of (await this.plan()).reverse()) {
      if (dayStartMs(day)! > t) continue;
      if (pq) {
        for await (const { item, recvUs, checkpoint } of this.rowsBack(pq)) if (checkpoint && recvUs <= tUs) return item;
        continue;
      }
      const it = await this.log.checkpointAtOrBefore(t);
      if (it && it.pos.day === day) return it;
    }
    return null;
  }

  async *follow(from: Position | 'start' | 'end', signal: AbortSignal): AsyncIterable<ReadItem> {
    const plan = await this.plan();
    const firstLogDay = plan.find((p) => !p.pq)?.day ?? '9999-99-99';
    if (from === 'end' || plan.every((p) => !p.pq) || (from !== 'start' && from.day >= firstLogDay)) {
      yield* this.log.follow(from, signal);
      return;
    }
    // Compacted days first (they are final), then hand over to the live log after the last seq.
    let lastSeq = from === 'start' ? -Infinity : from.seq - 1;
    for await (const item of this.read(from)) {
      if (item.pos.day >= firstLogDay || signal.aborted) break;
      lastSeq = item.pos.seq;
      yield item;
    }
    if (signal.aborted) return;
    const next = lastSeq === -Infinity ? null : await this.log.seekSeq(lastSeq + 1);
    yield* this.log.follow(next ?? 'start', signal);
  }
}

/** Wraps a log reader so compacted days are served from Parquet. */
export function compositeReader(dataDir: string, key: LogKey, log: FileLogReader): LogReader {
  return new CompositeReader(dataDir, key, log);
}
