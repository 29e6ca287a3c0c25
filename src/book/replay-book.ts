// One market's book state during a replay, and what each replay type makes of a record: the REST
// snapshot object (`book`), the level changes (`book_change`), and per-interval samples that follow
// the `interval` snapshot rules of book/interval-grid.ts (a bucket is served only when the books were valid
// from its start through its end; never forward-filled across a gap).

import { MarketBooks } from './book-state.js';
import type { GapLookahead } from './gap-lookahead.js';
import { IntervalGrid } from './interval-grid.js';
import type { Market } from '../schema/market.js';
import type { Family, Ladder, Level, Recorded } from '../schema/observation.js';
import { IsoFormatter } from '../schema/time.js';

/** The ISO texts of every replay line (one formatter: JS runs one line at a time). */
export const replayIso = new IsoFormatter();

/** A market of the replay: its family, the id on its lines, and its catalogue entry (null for a bare ticker). */
export interface ReplayMarket {
  readonly family: Family;
  /** How lines name the market (`market_id`, or `ticker` for yes/no), and the id. */
  readonly idField: 'market_id' | 'ticker';
  readonly id: string;
  readonly market: Market | null;
  /** The family's book state for this market (its descriptor's `replay.book`). */
  newBook(): ReplayBook;
}

/**
 * The replay's view of a market of a family descriptor `d`: the route and `serve`'s warm-up build
 * them here, so both make the same objects (and V8's code for one fits the other).
 */
export function replayMarket(
  d: { readonly family: Family; readonly idField: ReplayMarket['idField']; readonly replay: { book(m: ReplayMarket): ReplayBook } },
  id: string,
  market: Market | null,
): ReplayMarket {
  const m: ReplayMarket = { family: d.family, idField: d.idField, id, market, newBook: () => d.replay.book(m) };
  return m;
}

export type Change = { token_id?: string; outcome?: string | null; side: string; price: number | string | null; size: number | string };

/**
 * The books of one market as records are applied, with the facts every line type needs: which
 * tokens changed, whether the served books are valid, since when, and the newest book record. What
 * differs by family (which books make the market valid, the snapshot's shape) is a subclass, chosen
 * by the family's descriptor; this class holds the rest.
 */
export abstract class ReplayBook {
  readonly books = new MarketBooks();
  protected readonly outcomes = new Map<string, string>();
  validSince: number | null = null;
  /** The record a snapshot of the current state names (as families/coin/intervals.ts chooses it). */
  lastBook: Recorded | null = null;
  /** Seq of the newest record applied, or -1. */
  lastSeq = -1;

  constructor(readonly m: ReplayMarket) {
    const outs = m.market && 'outcomes' in m.market ? m.market.outcomes : [];
    for (const o of outs) this.outcomes.set(o.token_id, o.label);
  }

  /** Are the served books valid now (no gap since their last full book)? */
  abstract valid(): boolean;
  /** The REST snapshot object (with the book) for a record that produced one, else null. */
  abstract snapshot(rec: Recorded, changed: readonly string[], depth: number | undefined): Record<string, unknown> | null;
  /** The snapshot of the current state for an interval sample, or null when nothing valid is known. */
  abstract sample(depth: number): Record<string, unknown> | null;

  /** The JSON text of `snapshot(rec, changed, depth)`; subclasses build it faster where it matters. */
  snapshotText(rec: Recorded, changed: readonly string[], depth: number | undefined): string | null {
    const snap = this.snapshot(rec, changed, depth);
    return snap && JSON.stringify(snap);
  }

  /** Applies one record to the books; returns the token ids whose book changed. */
  protected applyRecord(rec: Recorded): string[] {
    return this.books.apply(rec);
  }

  /** Applies one record; returns the token ids whose book changed (yes/no: `['']` for a new book). */
  apply(rec: Recorded): string[] {
    const was = this.valid();
    const changed = this.applyRecord(rec);
    if (changed.length > 0 && (rec.type === 'book' || rec.type === 'book_delta' || rec.type === 'yesno_book')) this.lastBook = rec;
    else if (changed.length > 0 && rec.type === 'book_checkpoint' && (!was || this.lastBook === null)) this.lastBook = rec;
    const now = this.valid();
    if (!was && now) this.validSince = rec.recv_ts;
    else if (was && !now) this.validSince = null;
    this.lastSeq = rec.seq;
    return changed;
  }

  /** `"source_time":...,"receive_time":...,"seq":...` of a record, as the REST shapes print them. */
  protected timesText(rec: Recorded): string {
    return `"source_time":${rec.source_ts === null ? 'null' : `"${replayIso.format(rec.source_ts)}"`},"receive_time":"${replayIso.format(rec.recv_ts)}","seq":${rec.seq}`;
  }

  private readonly levelsMemo = new Map<string, LevelsText>();

  /**
   * `"bids":[[p,s],...],"asks":[...]` of a valid token (numbers as the REST routes print them), or
   * null. The same object (and text) until that token's book changes, and a side's text is kept
   * while only the other side changes (a delta touches one): most of a replay's work is here.
   */
  protected levelsText(token: string, depth: number | undefined): LevelsText | null {
    const v = this.books.view(token); // the same arrays until that side of the token's book changes
    if (!v) return null;
    const hit = this.levelsMemo.get(token);
    if (hit && hit.bids.levels === v.bids && hit.asks.levels === v.asks && hit.depth === depth) return hit;
    const same = hit !== undefined && hit.depth === depth;
    const bids = same && hit.bids.levels === v.bids ? hit.bids : sideText(v.bids, depth, hit?.bids);
    const asks = same && hit.asks.levels === v.asks ? hit.asks : sideText(v.asks, depth, hit?.asks);
    const entry: LevelsText = { bids, asks, depth, text: `"bids":${bids.text},"asks":${asks.text}` };
    this.levelsMemo.set(token, entry);
    return entry;
  }

  protected levels(out: Change[], token: string | undefined, side: string, ladder: Ladder, numeric: boolean): void {
    // Object literals of one shape, not a spread per level: a whole book is thousands of entries a
    // replay, and the spread was the largest item of a `book_change` replay's profile.
    const price = (p: string): number | string => (numeric ? Number(p) : p);
    const size = (s: string): number | string => (numeric ? Number(s) : s);
    if (token === undefined) {
      // A full book with an empty side says so: one entry with no price and size 0.
      if (ladder.length === 0) out.push({ side, price: null, size: size('0') });
      for (const [p, s] of ladder) out.push({ side, price: price(p), size: size(s) });
      return;
    }
    const outcome = this.outcomes.get(token) ?? null;
    if (ladder.length === 0) out.push({ token_id: token, outcome, side, price: null, size: size('0') });
    for (const [p, s] of ladder) out.push({ token_id: token, outcome, side, price: price(p), size: size(s) });
  }

  /** `book_change` data of a record (full books replace the token's book), or null when it changed nothing. */
  changes(rec: Recorded, changed: readonly string[]): { is_snapshot: boolean; changes: Change[] } | null {
    const out: Change[] = [];
    switch (rec.type) {
      case 'book':
        this.levels(out, rec.token_id, 'bid', rec.bids, true);
        this.levels(out, rec.token_id, 'ask', rec.asks, true);
        return { is_snapshot: true, changes: out };
      case 'book_checkpoint':
        for (const b of rec.books) {
          this.levels(out, b.token_id, 'bid', b.bids, true);
          this.levels(out, b.token_id, 'ask', b.asks, true);
        }
        return out.length > 0 ? { is_snapshot: true, changes: out } : null;
      case 'book_delta':
        if (changed.length === 0) return null; // a delta to an invalid book is not applied
        for (const c of rec.changes)
          out.push({
            token_id: rec.token_id,
            outcome: this.outcomes.get(rec.token_id) ?? null,
            side: c.side,
            price: Number(c.price),
            size: Number(c.size),
          });
        return { is_snapshot: false, changes: out };
      default:
        return null;
    }
  }

  /** The whole valid state as `book_change` data (the opening line of a replay), or null. */
  state(): { is_snapshot: true; changes: Change[] } | null {
    const out: Change[] = [];
    const order = [...this.outcomes.keys()];
    const valid = this.books.validTokens().sort((a, b) => rankOf(order, a) - rankOf(order, b) || (a < b ? -1 : a > b ? 1 : 0));
    for (const t of valid) {
      const v = this.books.view(t)!;
      this.levels(out, t, 'bid', v.bids, true);
      this.levels(out, t, 'ask', v.asks, true);
    }
    return out.length > 0 ? { is_snapshot: true, changes: out } : null;
  }

  outcome(token: string): string | null {
    return this.outcomes.get(token) ?? null;
  }
}

/** One side's `[[p,s],...]` text, with the level tuples and each level's text it was made of. */
export interface SideText {
  readonly levels: readonly Level[];
  readonly texts: readonly string[];
  readonly text: string;
}

/** The levels text of one token's book (levelsText): compare entries by identity to see a change. */
export interface LevelsText {
  readonly bids: SideText;
  readonly asks: SideText;
  readonly depth: number | undefined;
  readonly text: string;
}

/**
 * `[[p,s],...]` of one side, best first, at most `depth` levels. A book keeps a level's tuple until
 * that level changes, and a change inserts, replaces or removes a level in place: walking the
 * previous text of this side alongside finds every unchanged level's text (numbers as the REST
 * routes print them) without a lookup.
 */
function sideText(levels: readonly Level[], depth: number | undefined, prev: SideText | undefined): SideText {
  const n = depth === undefined ? levels.length : Math.min(depth, levels.length);
  const old = prev?.levels ?? [];
  const oldTexts = prev?.texts ?? [];
  const texts: string[] = new Array<string>(n);
  for (let i = 0, j = 0; i < n; i++) {
    const l = levels[i];
    if (j < oldTexts.length && old[j] === l) texts[i] = oldTexts[j++];
    else if (j + 1 < oldTexts.length && old[j + 1] === l) {
      texts[i] = oldTexts[j + 1]; // the level at j was removed
      j += 2;
    } else texts[i] = `[${Number(l[0])},${Number(l[1])}]`; // a new level (or a new size), or a whole new book
  }
  return { levels, texts, text: `[${texts.join(',')}]` };
}

const rankOf = (order: string[], t: string): number => {
  const i = order.indexOf(t);
  return i < 0 ? order.length : i;
};

/** A sample due at a bucket end: the bucket, and the snapshot (REST object plus `bucket_start`). */
export interface Sample {
  readonly bucketEnd: number;
  readonly seq: number;
  readonly data: Record<string, unknown>;
}

/**
 * Samples of one interval over the replay, on the grid every interval snapshot uses
 * (book/interval-grid.ts): a bucket is sampled only when the books were valid through it.
 */
export class IntervalSampler {
  private readonly grid: IntervalGrid;
  private book: ReplayBook | null = null;
  private out: Sample[] = [];

  /** `start`: first bucket start (aligned); `stop`: no bucket ends after it; `ahead`: gaps read ahead (book/gap-lookahead.ts). */
  constructor(intervalMs: number, depth: number, start: number, stop: number, ahead?: GapLookahead) {
    this.grid = new IntervalGrid(
      intervalMs,
      start,
      stop,
      {
        served: (bs) => {
          const book = this.book!;
          const snap = book.sample(depth);
          if (snap)
            this.out.push({
              bucketEnd: bs + intervalMs,
              seq: (snap.seq as number | undefined) ?? book.lastSeq,
              data: { ...snap, bucket_start: replayIso.format(bs) },
            });
        },
      },
      ahead,
    );
  }

  /** Decides every bucket that ends at or before `t` (call before applying a record received at t; see IntervalGrid.advance). */
  advance(t: number, book: ReplayBook, out: Sample[], spoiledFrom = Infinity): void {
    this.book = book;
    this.out = out;
    this.grid.advance(t, book, spoiledFrom);
  }

  /** After a record was applied: a break of validity inside the bucket spoils it. */
  noteApplied(wasValid: boolean, book: ReplayBook): void {
    this.grid.noteApplied(wasValid, book);
  }
}
