// One market-day merged from several recorders' copies of it. The books stream: every recorder's
// day is scanned for what it covered (a valid book: from its first whole book to its last record,
// minus its gap spans) and for its trades (scan.ts: a compacted day without reading its book
// changes); plan.ts picks a source per interval; then each
// source's records of its intervals are copied, each interval entered through a whole book the
// source held at the interval's start (a checkpoint of its books, or its yes/no book). Where no
// recorder covered, one gap (open at its start, closed at its end, as a recorder writes one).
// Trades seen by several recorders are kept once. Metrics follow the books' sources; the
// catalogue comes from the first recorder that has it. Every record names its recorder.

import { MarketBooks } from '../../book/book-state.js';
import type { Observation, PriceUnits, Recorded, Trade, YesNoBook } from '../../schema/observation.js';
import type { LogView, ReplayItem } from '../types.js';
import { planSegments, sourceAt, type RecorderCoverage, type Segment } from './plan.js';
import { scanBooks, type BooksScan } from './scan.js';

/** Where merged records go, in receive-time order. */
export type Emit = (obs: Observation, checkpoint: boolean) => Promise<void>;

/** A trade's venue identity (transaction hash or venue time, with token, price, size, side), or null without one. */
function tradeKey(t: Trade): string | null {
  if (t.tx_hash === undefined && t.source_ts === null) return null;
  return JSON.stringify([t.token_id, t.tx_hash ?? null, t.price, t.size ?? null, t.side ?? null, t.source_ts]);
}

/**
 * The trades to keep, each once, in receive order: for each venue identity, the copies of one
 * recorder (the interval's source when it saw the trade, else the one that saw it most often, so
 * two real fills alike stay two); a trade with no identity only from the source of its instant.
 */
export function keptTrades(
  byRecorder: ReadonlyMap<string, readonly Recorded<Trade>[]>,
  segments: readonly Segment[],
  order: readonly string[],
): Recorded<Trade>[] {
  const groups = new Map<string, Map<string, Recorded<Trade>[]>>();
  const out: Recorded<Trade>[] = [];
  for (const id of order) {
    for (const t of byRecorder.get(id) ?? []) {
      const k = tradeKey(t);
      if (k === null) {
        const src = sourceAt(segments, t.recv_ts);
        if (src === id || (src === null && id === order.find((x) => byRecorder.has(x)))) out.push({ ...t, recorder: id });
        continue;
      }
      let g = groups.get(k);
      if (!g) groups.set(k, (g = new Map<string, Recorded<Trade>[]>()));
      let l = g.get(id);
      if (!l) g.set(id, (l = []));
      l.push(t);
    }
  }
  for (const g of groups.values()) {
    let pick: string | null = null;
    for (const [id, l] of g) if (sourceAt(segments, l[0].recv_ts) === id) pick = id;
    if (pick === null) {
      let best = -1;
      for (const id of order) {
        const n = g.get(id)?.length ?? 0;
        if (n > best) [pick, best] = [id, n];
      }
    }
    for (const t of g.get(pick!)!) out.push({ ...t, recorder: pick! });
  }
  return out.sort((a, b) => a.recv_ts - b.recv_ts);
}

/** A recorder's records read forward once, with its books as they stand after what was read. */
class Cursor {
  private it: AsyncIterator<ReplayItem> | null = null;
  private head: Recorded | null = null;
  private ended = false;
  /** Records were taken without applying them (take with `each`): the books must be rebuilt. */
  private stale = false;
  books = new MarketBooks();
  units: PriceUnits = 'decimal';
  yesno: Recorded<YesNoBook> | null = null;

  constructor(
    readonly id: string,
    private readonly view: LogView,
  ) {}

  /**
   * Stands at `t` (records at `t` applied), with the books as the recorder held them there. It jumps
   * (the newest checkpoint before `t`, then the records up to `t`, as an `as_of` read rebuilds a
   * book) rather than read on whenever that skips records: a recorder that is the source of a few
   * intervals is read over those intervals only, not from the start of its day.
   */
  async seek(t: number): Promise<void> {
    if (this.it && !this.stale) {
      const head = await this.peek();
      if (head === null || head.recv_ts > t) return;
      const cp = await this.view.checkpointAtOrBefore(t);
      if (!cp || cp.rec.recv_ts <= head.recv_ts) return this.take(t, true);
    }
    await this.it?.return?.(undefined);
    this.stale = false;
    this.books = new MarketBooks();
    this.units = 'decimal';
    this.yesno = null;
    this.head = null;
    this.ended = false;
    this.it = this.view.replay({ time: t }, { warmup: true })[Symbol.asyncIterator]();
    await this.take(t, true);
  }

  private async peek(): Promise<Recorded | null> {
    if (this.head === null && !this.ended) {
      const n = await this.it!.next();
      if (n.done) this.ended = true;
      else this.head = n.value.rec;
    }
    return this.head;
  }

  /**
   * Takes every record before `until` (at or before when `inclusive`): applied to the books, or,
   * with `each`, passed to it unapplied. Copying a source's interval needs no books (only its entry
   * does), and applying every change of a day was most of a merge's reading: the books are then
   * stale, and the next seek rebuilds them from a checkpoint.
   */
  async take(until: number, inclusive: boolean, each?: (r: Recorded) => Promise<void>): Promise<void> {
    for (let r = await this.peek(); r !== null && (r.recv_ts < until || (inclusive && r.recv_ts === until)); r = await this.peek()) {
      this.head = null;
      if (each) {
        this.stale = true;
        await each(r);
      } else this.books.apply(r);
      if (r.type === 'book' || r.type === 'book_checkpoint') this.units = r.units;
      if (r.type === 'yesno_book') this.yesno = r;
    }
  }

  /** The whole book this recorder holds now, restated at `at` as the entry of its interval. */
  entry(at: number): Observation | null {
    const tag = { recv_ts: at, source_ts: null, origin: 'recorder' as const, recorder: this.id };
    if (this.yesno) {
      const { seq: _seq, ...y } = this.yesno;
      return { ...y, ...tag, source_ts: this.yesno.source_ts };
    }
    const books = this.books.checkpointBooks();
    if (books.length === 0) return null;
    return {
      type: 'book_checkpoint',
      ...tag,
      units: this.units,
      books: books.map((b) => ({ token_id: b.token_id, bids: b.bids, asks: b.asks })),
    };
  }

  async close(): Promise<void> {
    await this.it?.return?.(undefined);
  }
}

const strip = (r: Recorded, recorder: string): Observation => {
  const { seq: _seq, ...o } = r;
  return { ...o, recorder };
};

export interface BooksMerge {
  readonly segments: Segment[];
  readonly coverage: RecorderCoverage[];
  readonly records: number;
}

/**
 * Merges one market's books of the day from `views` (recorder id → its view, in priority order)
 * into `emit`. `scanned` holds the recorders' scans already made (scan.ts); the others are scanned
 * here. Returns the plan it followed (for metrics and the coverage record).
 */
export async function mergeBooks(
  views: ReadonlyMap<string, LogView>,
  dayEnd: number,
  emit: Emit,
  scanned: ReadonlyMap<string, BooksScan> = new Map(),
): Promise<BooksMerge> {
  const order = [...views.keys()];
  const scans = new Map<string, BooksScan>();
  for (const [id, v] of views) scans.set(id, scanned.get(id) ?? (await scanBooks(id, v, dayEnd)));
  const coverage = order.map((id) => scans.get(id)!.coverage);
  const segments = planSegments(coverage);
  const trades = keptTrades(new Map(order.map((id) => [id, scans.get(id)!.trades])), segments, order);
  let ti = 0;
  let records = 0;
  const out = async (o: Observation, checkpoint: boolean): Promise<void> => {
    while (ti < trades.length && trades[ti].recv_ts <= o.recv_ts) {
      await emit(strip(trades[ti], trades[ti].recorder!), false);
      ti++;
      records++;
    }
    await emit(o, checkpoint);
    records++;
  };
  const cursors = new Map<string, Cursor>();
  try {
    let openGap: Segment | null = null;
    for (const s of segments) {
      if (s.source === null) {
        await out(
          {
            type: 'gap',
            recv_ts: s.start,
            source_ts: null,
            reason: s.reason ?? 'not_recording',
            start_ts: s.start,
            end_ts: null,
            detail: 'no recorder held this market',
            origin: 'recorder',
          },
          false,
        );
        openGap = s;
        continue;
      }
      let c = cursors.get(s.source);
      if (!c) cursors.set(s.source, (c = new Cursor(s.source, views.get(s.source)!)));
      await c.seek(s.start);
      if (openGap) {
        await out(
          {
            type: 'gap',
            recv_ts: s.start,
            source_ts: null,
            reason: openGap.reason ?? 'not_recording',
            start_ts: openGap.start,
            end_ts: s.start,
            detail: 'no recorder held this market',
            origin: 'recorder',
          },
          false,
        );
        openGap = null;
      }
      const entry = c.entry(s.start);
      if (entry) await out(entry, entry.type === 'book_checkpoint');
      const src = s.source;
      await c.take(s.end, false, async (r) => {
        if (r.type === 'gap' || r.type === 'trade') return; // the merge writes its own gaps, and the trades kept once
        await out(strip(r, src), r.type === 'book_checkpoint');
      });
    }
    // The day ends as its last source's did: a recorder stopped (or lost the feed) says so with a
    // gap from then on, and so does the merged day (else its books would look held to the end).
    const end = segments.at(-1);
    const tail = end?.source ? scans.get(end.source)!.coverage.gaps.find((g) => g.start === end.end) : undefined;
    if (end && tail) {
      await out(
        {
          type: 'gap',
          recv_ts: end.end,
          source_ts: null,
          reason: tail.reason,
          start_ts: end.end,
          end_ts: null,
          detail: `recorder ${end.source} stopped holding this market`,
          origin: 'recorder',
          recorder: end.source!,
        },
        false,
      );
    }
    while (ti < trades.length) {
      await emit(strip(trades[ti], trades[ti].recorder!), false);
      ti++;
      records++;
    }
  } finally {
    for (const c of cursors.values()) await c.close();
  }
  return { segments, coverage, records };
}

/**
 * Merges a stream of samples (metrics) or events (catalogue): each record from the recorder that is
 * the books' source at its time; where there is none (no books, or a merged gap), from the first
 * recorder that has the stream.
 */
export async function mergeFollowing(
  views: ReadonlyMap<string, LogView>,
  segments: readonly Segment[] | null,
  emit: Emit,
): Promise<number> {
  const order = [...views.keys()];
  const fallback = order[0];
  const all: Observation[] = [];
  for (const id of order) {
    for await (const { rec } of views.get(id)!.replay('start')) {
      const src = segments ? sourceAt(segments, rec.recv_ts) : null;
      if ((src !== null && views.has(src) ? src : fallback) === id) all.push(strip(rec, id));
    }
  }
  all.sort((a, b) => a.recv_ts - b.recv_ts); // stable: one recorder's order kept
  for (const o of all) await emit(o, false);
  return all.length;
}
