// Candles of one market's outcomes, built record by record: the one implementation behind the
// `candles` route, the `candles` dataset (compaction) and replay's `candle_1m` lines. Prices are
// exact scaled integers (the datasets' DECIMAL scales), never binary doubles, so the three agree to
// the last digit. The books are the ones every other reader rebuilds (book/book-state.ts): a candle
// covers the time its outcome's book was valid; the rest of it is its gap time, and a candle with no
// valid instant is absent (never forward-filled across a gap).

import { MarketBooks } from '../../book/book-state.js';
import type { SampledMarket } from '../../book/sampled-books.js';
import type { Ladder, Recorded } from '../../schema/observation.js';
import { encodeDecimal } from '../parquet/decimal.js';

/** One outcome a candle is about, and where its book comes from. */
export interface CandleOutcome {
  readonly label: string;
  /** Its own token id (trades are matched on it); null for a yes/no market. */
  readonly token: string | null;
  /** The token whose stored book prices it ('' for a yes/no book). */
  readonly source: string;
  /** The stored book is the other outcome's: sides swapped, price 1 − p. */
  readonly mirror: boolean;
}

export interface Ohlc {
  open: number;
  high: number;
  low: number;
  close: number;
}

/** A finished candle. Prices are unscaled integers: `mid` at the price scale + 1, the rest at the price scale. */
export interface Candle {
  readonly start: number;
  readonly outcome: CandleOutcome;
  readonly mid: Ohlc | null;
  readonly last: Ohlc | null;
  readonly bestBid: number | null;
  readonly bestAsk: number | null;
  /** Sum of trade sizes, unscaled at the size scale. */
  readonly volume: bigint;
  readonly trades: number;
  /** Milliseconds of the candle (up to what is known) its book was not valid. */
  readonly gapMs: number;
  /** `dollars` or `cents` for a yes/no book (the unit of its prices), else null. */
  readonly units: string | null;
  /** The newest record the candle shows (its close). */
  readonly at: Recorded;
}

export interface CandleSpec {
  readonly mode: SampledMarket;
  readonly outcomes: readonly CandleOutcome[];
  readonly intervalMs: number;
  /** First candle start (aligned to the interval): nothing before it is a candle. */
  readonly lo: number;
  readonly priceScale: number;
  readonly sizeScale: number;
  /** Names the market in a refused value's message. */
  readonly where: string;
}

/** The outcomes a candle set is made of, from the catalogue's (token, label) list in its order. */
export function candleOutcomes(
  mode: SampledMarket,
  outcomes: readonly { readonly label: string; readonly token_id: string }[],
): CandleOutcome[] {
  if (mode === 'yesno') return [{ label: 'yes', token: null, source: '', mirror: false }];
  if (mode === 'every_outcome') return outcomes.map((o) => ({ label: o.label, token: o.token_id, source: o.token_id, mirror: false }));
  // first_outcome: the venue prices the book in the first outcome; the others are its mirror.
  const first = outcomes[0]?.token_id;
  return first === undefined ? [] : outcomes.map((o, i) => ({ label: o.label, token: o.token_id, source: first, mirror: i > 0 }));
}

interface Stats {
  mid: Ohlc | null;
  last: Ohlc | null;
  bid: number | null;
  ask: number | null;
  volume: bigint;
  trades: number;
  units: string | null;
  at: Recorded;
}

/** One stored book's top, validity and the spans it was not valid. */
interface Source {
  valid: boolean;
  bidLevel: unknown;
  askLevel: unknown;
  bid: number | null;
  ask: number | null;
  /** Unscaled 1 in the book's units (1 dollar, 100 cents, probability 1). */
  one: number;
  units: string | null;
  invalidSince: number | null;
  readonly invalid: [number, number][];
  /** The record that made the current top (a carried candle names it). */
  at: Recorded | null;
}

const touch = (o: Ohlc | null, v: number): Ohlc => {
  if (o === null) return { open: v, high: v, low: v, close: v };
  if (v > o.high) o.high = v;
  if (v < o.low) o.low = v;
  o.close = v;
  return o;
};

export class CandleBuilder {
  private readonly books = new MarketBooks();
  private readonly sources = new Map<string, Source>();
  /** Per outcome: bucket start → its stats so far. */
  private readonly stats: Map<number, Stats>[];
  private readonly byToken = new Map<string, number>();
  private cur: number;
  private readonly I: number;

  constructor(private readonly spec: CandleSpec) {
    this.I = spec.intervalMs;
    this.cur = spec.lo - spec.intervalMs;
    this.stats = spec.outcomes.map(() => new Map<number, Stats>());
    const one = 10 ** spec.priceScale;
    spec.outcomes.forEach((o, i) => {
      if (o.token !== null) this.byToken.set(o.token, i);
      if (!this.sources.has(o.source)) {
        this.sources.set(o.source, {
          valid: false,
          bidLevel: null,
          askLevel: null,
          bid: null,
          ask: null,
          one,
          units: null,
          invalidSince: spec.lo,
          invalid: [],
          at: null,
        });
      }
    });
  }

  private bucketOf(t: number): number {
    return Math.floor(t / this.I) * this.I;
  }

  /** Opens every bucket up to the one holding `t`, each starting with the book as it stood (when valid). */
  private roll(t: number): void {
    const b = this.bucketOf(t);
    while (this.cur < b) {
      this.cur += this.I;
      this.spec.outcomes.forEach((o, i) => {
        const s = this.sources.get(o.source)!;
        if (s.valid && s.at !== null) this.topInto(i, s, s.at);
      });
    }
  }

  private statsOf(i: number, at: Recorded, units: string | null): Stats {
    const m = this.stats[i];
    let st = m.get(this.cur);
    if (st === undefined) m.set(this.cur, (st = { mid: null, last: null, bid: null, ask: null, volume: 0n, trades: 0, units, at }));
    return st;
  }

  /** The outcome's top of book into the current bucket. */
  private topInto(i: number, s: Source, at: Recorded): void {
    const o = this.spec.outcomes[i];
    const st = this.statsOf(i, at, s.units);
    const bid = o.mirror ? (s.ask === null ? null : s.one - s.ask) : s.bid;
    const ask = o.mirror ? (s.bid === null ? null : s.one - s.bid) : s.ask;
    st.bid = bid;
    st.ask = ask;
    st.units = s.units;
    if (at.seq >= st.at.seq) st.at = at;
    // (bid + ask) / 2 at one more decimal: (bid + ask) × 5, exact.
    if (bid !== null && ask !== null) st.mid = touch(st.mid, (bid + ask) * 5);
  }

  private price(text: string, field: string): number {
    const u = encodeDecimal(text, this.spec.priceScale, this.spec.where, field).unscaled;
    return typeof u === 'number' ? u : Number(u);
  }

  /** Re-reads a source's top from its ladders; true when it changed. */
  private setTop(s: Source, bids: Ladder, asks: Ladder, askIsBid: boolean): boolean {
    const b0 = bids[0];
    const a0 = asks[0];
    if (b0 === s.bidLevel && a0 === s.askLevel) return false;
    s.bidLevel = b0;
    s.askLevel = a0;
    s.bid = b0 === undefined ? null : this.price(b0[0], 'best bid');
    // A yes/no book's second ladder holds no bids: the yes ask is 1 less the best no bid.
    s.ask = a0 === undefined ? null : askIsBid ? s.one - this.price(a0[0], 'best no bid') : this.price(a0[0], 'best ask');
    return true;
  }

  private setValid(s: Source, valid: boolean, t: number): void {
    if (valid === s.valid) return;
    s.valid = valid;
    if (valid) {
      if (s.invalidSince !== null) s.invalid.push([s.invalidSince, t]);
      s.invalidSince = null;
    } else s.invalidSince = t;
  }

  apply(rec: Recorded): void {
    const t = rec.recv_ts;
    const live = t >= this.spec.lo;
    if (live) this.roll(t);
    if (rec.type === 'trade') {
      const i = this.byToken.get(rec.token_id);
      if (i === undefined || !live) return;
      const st = this.statsOf(i, rec, this.sources.get(this.spec.outcomes[i].source)!.units);
      st.last = touch(st.last, this.price(rec.price, 'trade price'));
      st.trades++;
      if (rec.size !== undefined) {
        const v = encodeDecimal(rec.size, this.spec.sizeScale, this.spec.where, 'trade size').unscaled;
        st.volume += BigInt(v);
      }
      if (rec.seq >= st.at.seq) st.at = rec;
      return;
    }
    if (rec.type === 'gap') {
      const hit = rec.token_id === undefined ? [...this.sources.values()] : [this.sources.get(rec.token_id)].filter((s) => s !== undefined);
      // A closed gap is the authoritative span of a hole (also one written after the fact).
      if (rec.end_ts !== null) for (const s of hit) s.invalid.push([rec.start_ts, rec.end_ts]);
      else {
        for (const s of hit) {
          // The books were not trustworthy from the gap's start, which may precede its record.
          if (s.valid) this.setValid(s, false, Math.min(rec.start_ts, t));
          else if (s.invalidSince !== null) s.invalidSince = Math.min(s.invalidSince, rec.start_ts);
        }
        if (this.spec.mode !== 'yesno') this.books.apply(rec);
      }
      return;
    }
    let changed: readonly string[];
    if (rec.type === 'yesno_book') {
      const s = this.sources.get('');
      if (s === undefined) return;
      s.one = (rec.units === 'cents' ? 100 : 1) * 10 ** this.spec.priceScale;
      s.units = rec.units;
      this.setValid(s, true, t);
      s.bidLevel = s.askLevel = null; // a poll's ladders are new throughout
      this.setTop(s, rec.yes, rec.no, true);
      s.at = rec;
      changed = [''];
    } else {
      if (this.spec.mode === 'yesno') return;
      changed = this.books.apply(rec);
      for (const token of changed) {
        const s = this.sources.get(token);
        if (s === undefined) continue;
        const v = this.books.view(token);
        this.setValid(s, v !== null, t);
        if (v === null) continue;
        if (this.setTop(s, v.bids, v.asks, false) || s.at === null || rec.type !== 'book_checkpoint') s.at = rec;
      }
    }
    if (!live) return;
    this.spec.outcomes.forEach((o, i) => {
      const s = this.sources.get(o.source)!;
      if (s.valid && changed.includes(o.source)) this.topInto(i, s, s.at!);
    });
  }

  /**
   * The candles from `lo` to `knownEnd` (what happened after it is not known): by start, then by
   * outcome label (the datasets' row order). A candle's gap time counts from its start to its end or `knownEnd`.
   */
  finish(knownEnd: number): Candle[] {
    if (knownEnd > this.spec.lo) this.roll(knownEnd - 1);
    const merged = new Map<string, [number, number][]>();
    for (const [k, s] of this.sources) {
      const spans = s.invalid.slice();
      if (s.invalidSince !== null) spans.push([s.invalidSince, knownEnd]);
      merged.set(k, mergeSpans(spans));
    }
    const out: Candle[] = [];
    this.spec.outcomes.forEach((o, i) => {
      const spans = merged.get(o.source)!;
      let j = 0;
      for (const [start, st] of [...this.stats[i]].sort((a, b) => a[0] - b[0])) {
        const end = Math.min(start + this.I, knownEnd);
        if (end <= start) continue;
        while (j < spans.length && spans[j][1] <= start) j++;
        let gap = 0;
        for (let k = j; k < spans.length && spans[k][0] < end; k++) gap += Math.min(end, spans[k][1]) - Math.max(start, spans[k][0]);
        if (gap >= end - start) continue; // wholly inside a gap: absent
        out.push({
          start,
          outcome: o,
          mid: st.mid,
          last: st.last,
          bestBid: st.bid,
          bestAsk: st.ask,
          volume: st.volume,
          trades: st.trades,
          gapMs: gap,
          units: st.units,
          at: st.at,
        });
      }
    });
    return out.sort((a, b) => a.start - b.start || (a.outcome.label < b.outcome.label ? -1 : a.outcome.label > b.outcome.label ? 1 : 0));
  }
}

/** Sorted, overlapping and touching spans joined. */
function mergeSpans(spans: [number, number][]): [number, number][] {
  const s = spans.filter(([a, b]) => b > a).sort((x, y) => x[0] - y[0]);
  const out: [number, number][] = [];
  for (const [a, b] of s) {
    const top = out[out.length - 1];
    if (top && a <= top[1]) top[1] = Math.max(top[1], b);
    else out.push([a, b]);
  }
  return out;
}
