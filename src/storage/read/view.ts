// One logical log as it stands at one moment: its days planned once (a log file where one exists,
// else the compacted partition), then any number of seeks and passes over that plan. A page or an
// as-of read opens one view and makes every storage call on it instead of re-listing days each time.

import { dayStartMs, utcDay } from '../../schema/time.js';
import { msToUs } from '../log/frame.js';
import type { DaySource } from './log-day.js';
import { readAhead } from './read-ahead.js';
import type { LogView, Position, ReadItem, RecordChunk, RecordsOptions, ReplayFrom, ReplayItem, ReplayOptions } from '../types.js';

/** Where a pass starts: the day's number in the plan and the position in it. */
interface At {
  readonly k: number;
  readonly pos: Position;
}

export class PlannedView implements LogView {
  readonly days: readonly string[];

  /** `plan`: one source per day, ascending, each day once. */
  constructor(private readonly plan: readonly DaySource[]) {
    this.days = plan.map((d) => d.day);
  }

  private indexOf(day: string): number {
    return this.plan.findIndex((d) => d.day === day);
  }

  /** The first record at or after `from`, with its day's number in the plan. */
  private async locate(from: ReplayFrom): Promise<At | null> {
    if (from === 'start') {
      for (let k = 0; k < this.plan.length; k++) {
        for await (const it of this.plan[k].forward(null)) return { k, pos: it.pos };
      }
      return null;
    }
    if ('time' in from) {
      const t = from.time;
      if (!Number.isFinite(t)) return null;
      const tUs = msToUs(t);
      // Records are filed by receive day: days before t's day cannot hold the answer.
      const tDay = t < 0 ? '0000-00-00' : utcDay(Math.min(t, 8.64e15));
      for (let k = 0; k < this.plan.length; k++) {
        if (this.plan[k].day < tDay) continue;
        const pos = await this.plan[k].seekTime(Math.max(tUs, msToUs(dayStartMs(this.plan[k].day)!)));
        if (pos) return { k, pos };
      }
      return null;
    }
    if ('pos' in from) {
      const k = this.indexOf(from.pos.day);
      if (k >= 0 && (await this.plan[k].holds(from.pos))) return { k, pos: from.pos };
      return this.locate({ seq: from.pos.seq }); // seq is authoritative (compacted since, or stale)
    }
    const s = from.seq;
    if (Number.isNaN(s)) return null;
    for (let k = 0; k < this.plan.length; k++) {
      const pos = await this.plan[k].seekSeq(s);
      if (pos) return { k, pos };
    }
    return null;
  }

  async seek(from: ReplayFrom): Promise<Position | null> {
    return (await this.locate(from))?.pos ?? null;
  }

  /** The newest checkpoint-marked record with seq < s, searched from day `k` back; null: none. */
  private async checkpointBefore(k: number, s: number): Promise<At | null> {
    for (let j = Math.min(k, this.plan.length - 1); j >= 0; j--) {
      const pos = await this.plan[j].checkpointBeforeSeq(s);
      if (pos) return { k: j, pos };
    }
    return null;
  }

  /**
   * One forward pass (see LogView.replay). Holds one day's file handle at a time and at most one
   * chunk of decoded records; stopping early (break, return()) releases the handle at once.
   */
  async *replay(from: ReplayFrom, opts: ReplayOptions = {}): AsyncGenerator<ReplayItem> {
    const endUs = opts.until === undefined ? Infinity : msToUs(opts.until);
    const start = await this.locate(from);
    if (!start) return;
    const startSeq = start.pos.seq;
    let at: At = start;
    if (opts.warmup && from !== 'start') {
      // The newest checkpoint before the start, else the first record: the books need all before it.
      at = (await this.checkpointBefore(start.k, startSeq)) ?? (await this.locate('start')) ?? start;
    }
    for (let k = at.k; k < this.plan.length; k++) {
      for await (const it of this.plan[k].forward(k === at.k ? at.pos : null)) {
        if (msToUs(it.rec.recv_ts) >= endUs) return;
        yield { rec: it.rec, pos: it.pos, warmup: it.pos.seq < startSeq };
      }
    }
  }

  /** See LogView.records: the days' chunks (the next one read while this one is handled), the last one cut before `until`. */
  async *records(from: ReplayFrom, opts: RecordsOptions = {}): AsyncGenerator<RecordChunk> {
    const endUs = opts.until === undefined ? Infinity : msToUs(opts.until);
    const at = await this.locate(from);
    if (!at) return;
    for (let k = at.k; k < this.plan.length; k++) {
      for await (const chunk of readAhead(this.plan[k].forwardRecords(k === at.k ? at.pos : null))) {
        if (chunk.recvUs(chunk.length - 1) < endUs) {
          yield chunk;
          continue;
        }
        let n = 0;
        while (chunk.recvUs(n) < endUs) n++;
        if (n > 0) yield { length: n, recvUs: (i) => chunk.recvUs(i), record: (i) => chunk.record(i) };
        return;
      }
    }
  }

  async *backward(before: Position | 'end', opts: { readonly startTime?: number } = {}): AsyncGenerator<ReadItem> {
    const startUs = opts.startTime === undefined ? -Infinity : msToUs(opts.startTime);
    for (let k = this.plan.length - 1; k >= 0; k--) {
      const src = this.plan[k];
      if (before !== 'end' && src.day > before.day) continue;
      if (startUs !== -Infinity && msToUs(dayStartMs(src.day)! + 86_400_000) <= startUs) return;
      // Null: the day's end (nothing of this day lies at or after `before`).
      const bound = before !== 'end' && src.day === before.day ? await src.boundOf(before) : null;
      for await (const it of src.backward(bound)) {
        if (msToUs(it.rec.recv_ts) < startUs) return;
        yield it;
      }
    }
  }

  async first(): Promise<ReadItem | null> {
    for await (const it of this.replay('start')) return it;
    return null;
  }

  async latest(): Promise<ReadItem | null> {
    for (let k = this.plan.length - 1; k >= 0; k--) {
      const it = await this.plan[k].latest();
      if (it) return it;
    }
    return null;
  }

  async checkpointAtOrBefore(t: number): Promise<ReadItem | null> {
    if (Number.isNaN(t)) return null;
    const tUs = msToUs(t);
    for (let k = this.plan.length - 1; k >= 0; k--) {
      if (dayStartMs(this.plan[k].day)! > t) continue;
      const it = await this.plan[k].checkpointAtOrBefore(tUs);
      if (it) return it;
    }
    return null;
  }
}
