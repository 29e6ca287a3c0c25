// One logical log across live log days and compacted Parquet days, behind the same LogReader
// interface: each day is served from its log file while that exists, else from its partition.
// In a compacted day a position's offset is the row index of the market's day and its seq is
// authoritative, so cursors made before compaction keep working after the log is deleted.

import { statSync } from 'node:fs';
import { utcDay } from '../../schema/time.js';
import { listDays, logFilePath } from '../paths.js';
import { parquetStore, type ParquetStore } from '../parquet/reader.js';
import type { Stream as Dataset } from '../parquet/datasets.js';
import type { DaySource } from './log-day.js';
import { ParquetDay } from './parquet-day.js';
import type { FileLogReader } from './reader.js';
import { replayFrom, ViewReader } from './view-reader.js';
import { PlannedView } from './view.js';
import type { LogKey, LogReader, LogSpan, LogView, Position, ReadItem, SpanHint } from '../types.js';

export class CompositeReader extends ViewReader implements LogReader {
  private readonly store: ParquetStore;
  private readonly dataset: Dataset;
  /** Views planned by this reader (tests and benchmarks check that a request plans once). */
  plans = 0;

  /** The log day the last `latest()` found its record in (a hint for the next call). */
  private latestDay: string | null = null;

  constructor(
    readonly dataDir: string,
    readonly key: LogKey,
    private readonly log: FileLogReader,
    store?: ParquetStore,
  ) {
    super();
    this.store = store ?? parquetStore(dataDir);
    this.dataset = key.stream;
  }

  /** Days ascending; a day without a log file but with a published partition row is served from Parquet. */
  private async plan(): Promise<DaySource[]> {
    this.plans++;
    const logDays = await listDays(this.dataDir, this.key);
    const have = new Set(logDays);
    const plan: DaySource[] = logDays.map((day) => this.log.day(day));
    for (const day of await this.store.dates(this.key.family, this.dataset)) {
      if (have.has(day)) continue;
      const md = await this.store.marketDay(this.key.family, this.dataset, day, this.key.market);
      if (md) plan.push(new ParquetDay(md));
    }
    return plan.sort((a, b) => (a.day < b.day ? -1 : a.day > b.day ? 1 : 0));
  }

  async view(): Promise<LogView> {
    return new PlannedView(await this.plan());
  }

  async days(): Promise<string[]> {
    return [...(await this.view()).days];
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
    const plan = await this.plan();
    for (let k = plan.length - 1; k >= 0; k--) {
      const item = await plan[k].latest();
      if (!item) continue;
      if (!(plan[k] instanceof ParquetDay)) this.latestDay = plan[k].day;
      return item;
    }
    return null;
  }

  /**
   * First and newest record (see LogReader.span). The days are those a plan would hold; a day's end
   * comes from its partition's manifest when that is what a read would serve: the log is gone, or it
   * is the very log compaction read (same bytes, same last seq, nothing quarantined). Otherwise the
   * day is read as a view would read it. A cold coverage page thus opens only live and uncompacted logs.
   */
  async span(hint: SpanHint = {}): Promise<LogSpan | null> {
    const logDays = hint.logDays ?? (await listDays(this.dataDir, this.key));
    const have = new Set(logDays);
    const dates = hint.parquetDates ?? (await this.store.dates(this.key.family, this.dataset));
    const days = [...new Set([...logDays, ...dates])].sort();
    let first: LogSpan['first'] | null = null;
    let k = 0;
    for (; k < days.length && first === null; k++) first = await this.dayEnd(days[k], have.has(days[k]), 'first', hint);
    if (first === null) return null;
    for (let j = days.length - 1; j >= k - 1; j--) {
      const last = await this.dayEnd(days[j], have.has(days[j]), 'last', hint);
      if (last !== null) return { first, last };
    }
    return null; // unreachable: the first day has a last record
  }

  private async dayEnd(day: string, hasLog: boolean, end: 'first' | 'last', hint: SpanHint = {}): Promise<LogSpan['first'] | null> {
    const { family, market } = this.key;
    const s = await this.store.daySummary(family, this.dataset, day, market);
    if (s && (!hasLog || this.sameAsCompacted(day, s.logBytes, s.logLastSeq, s.last.seq, s.quarantined, hint))) return s[end];
    let src: DaySource | null = null;
    if (hasLog) src = this.log.day(day);
    else if (s !== null) {
      const md = await this.store.marketDay(family, this.dataset, day, market);
      if (md) src = new ParquetDay(md);
    }
    if (src === null) return null;
    let item: ReadItem | null = null;
    if (end === 'last') item = await src.latest();
    else
      for await (const it of src.forward(null)) {
        item = it;
        break;
      }
    return item ? { recv_ts: item.rec.recv_ts, seq: item.rec.seq } : null;
  }

  /** True when the day's log is still what compaction read (so its manifest's ends are the log's). */
  private sameAsCompacted(
    day: string,
    bytes: number,
    lastSeq: number,
    indexedLastSeq: number,
    quarantined: number,
    hint: SpanHint,
  ): boolean {
    if (bytes < 0 || quarantined > 0 || lastSeq !== indexedLastSeq) return false;
    if (hint.newest?.day === day) return hint.newest.size === bytes;
    const st = statSync(logFilePath(this.dataDir, this.key, day), { throwIfNoEntry: false });
    return st !== undefined && st.size === bytes;
  }

  async *follow(from: Position | 'start' | 'end', signal: AbortSignal): AsyncIterable<ReadItem> {
    const plan = await this.plan();
    const firstLogDay = plan.find((p) => !(p instanceof ParquetDay))?.day ?? '9999-99-99';
    if (from === 'end' || plan.every((p) => !(p instanceof ParquetDay)) || (from !== 'start' && from.day >= firstLogDay)) {
      yield* this.log.follow(from, signal);
      return;
    }
    // Compacted days first (they are final), then hand over to the live log after the last seq.
    let lastSeq = from === 'start' ? -Infinity : from.seq - 1;
    for await (const item of new PlannedView(plan).replay(replayFrom(from))) {
      if (item.pos.day >= firstLogDay || signal.aborted) break;
      lastSeq = item.pos.seq;
      yield { rec: item.rec, pos: item.pos };
    }
    if (signal.aborted) return;
    const next = lastSeq === -Infinity ? null : await this.log.seekSeq(lastSeq + 1);
    yield* this.log.follow(next ?? 'start', signal);
  }
}

/** Wraps a log reader so compacted days are served from Parquet (the process-wide store unless given one). */
export function compositeReader(dataDir: string, key: LogKey, log: FileLogReader, store?: ParquetStore): LogReader {
  return new CompositeReader(dataDir, key, log, store);
}
