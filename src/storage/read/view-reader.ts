// What a LogReader does through one LogView per call, written once for both readers: the day files
// alone (reader.ts) and log days plus compacted days (composite-reader.ts). A subclass says how to
// plan a view; every seek, read, replay, first and as-of checkpoint below plans exactly one.

import type { LogView, Position, ReadItem, ReadOptions, RecordChunk, ReplayFrom, ReplayItem, ReplayOptions } from '../types.js';

/** At most `limit` items of `it` (the LogReader read options over a view pass). */
export async function* take<T>(it: AsyncGenerator<T>, limit = Infinity): AsyncGenerator<T> {
  if (limit <= 0) return;
  let left = limit;
  for await (const x of it) {
    yield x; // leaving the loop (here or by the consumer) returns `it`, which releases its file
    if (--left <= 0) return;
  }
}

/** `from` of a LogReader read, as a replay start. */
export const replayFrom = (from: Position | 'start'): ReplayFrom => (from === 'start' ? 'start' : { pos: from });

export abstract class ViewReader {
  /** The log's days planned once: every operation of one request should share one view. */
  abstract view(): Promise<LogView>;

  async *replay(from: ReplayFrom, opts?: ReplayOptions): AsyncGenerator<ReplayItem> {
    yield* (await this.view()).replay(from, opts);
  }

  async seekTime(t: number): Promise<Position | null> {
    if (!Number.isFinite(t)) return null;
    return (await this.view()).seek({ time: t });
  }

  async seekSeq(s: number): Promise<Position | null> {
    if (Number.isNaN(s)) return null;
    return (await this.view()).seek({ seq: s });
  }

  async *read(from: Position | 'start', opts: ReadOptions = {}): AsyncIterable<ReadItem> {
    if ((opts.limit ?? Infinity) <= 0) return;
    const v = await this.view();
    for await (const { rec, pos } of take(v.replay(replayFrom(from), { until: opts.endTime }), opts.limit)) yield { rec, pos };
  }

  async *readChunks(from: Position | 'start', opts: { readonly endTime?: number } = {}): AsyncIterable<RecordChunk> {
    yield* (await this.view()).records(replayFrom(from), { until: opts.endTime });
  }

  async *readBackward(
    before: Position | 'end',
    opts: { readonly startTime?: number; readonly limit?: number } = {},
  ): AsyncIterable<ReadItem> {
    if ((opts.limit ?? Infinity) <= 0) return;
    yield* take((await this.view()).backward(before, { startTime: opts.startTime }), opts.limit);
  }

  async first(): Promise<ReadItem | null> {
    return (await this.view()).first();
  }

  async checkpointAtOrBefore(t: number): Promise<ReadItem | null> {
    return (await this.view()).checkpointAtOrBefore(t);
  }
}
