// `book_snapshots` rows of one market's day (anchor: Tardis `book_snapshot_25_1s`): the top 25
// levels a side, one row per second and book, only for the seconds the books were valid from start
// to end. The seconds are decided by the grid `/snapshots?interval=1s` uses (book/interval-grid.ts;
// a test compares the two); a row shows the newest book record before the second's end. Nothing
// before the first capture, nothing forward-filled across a gap, nothing after the log's last record
// unless the log goes on past the day.

import { GapLookahead, readingAhead } from '../../book/gap-lookahead.js';
import { alignUp, IntervalGrid } from '../../book/interval-grid.js';
import { SampledBooks } from '../../book/sampled-books.js';
import type { Family, Ladder, Recorded } from '../../schema/observation.js';
import { DAY_MS, dayStartMs } from '../../schema/time.js';
import type { LogView } from '../types.js';
import { DecimalError, encodeDecimal, type Unscaled } from './decimal.js';
import type { RowSink } from './rows.js';
import { SNAPSHOT_DEPTH, SNAPSHOT_INTERVAL_MS, scalesOf, snapshotBooksOf } from './datasets.js';

/** Names of the level fields in a refused value's message, made once. */
const LEVEL_FIELDS = Array.from({ length: SNAPSHOT_DEPTH }, (_, i) => ({ price: `level ${i} price`, size: `level ${i} size` }));

/** One book's row with every column that changes only when the book does, encoded once per change. */
interface Encoded {
  readonly bids: Ladder;
  readonly asks: Ladder;
  /** A whole row by column index; the per-second columns are filled in before each emit. */
  readonly row: unknown[];
}

export interface SnapshotInput {
  readonly family: Family;
  readonly market: string;
  readonly day: string;
  /** Token id → outcome label, in the catalogue's order (first outcome first); empty for yes/no. */
  readonly outcomes: ReadonlyMap<string, string>;
}

/**
 * Appends the market's `book_snapshots` rows for the day to `sink`, reading the market's composite
 * view (the day's records, and before them the newest checkpoint that makes the books whole at
 * 00:00). Returns the number of rows, and of rows left out because their book held a value the
 * columns cannot hold exactly (its record is set aside by `book_changes`; see rows.ts).
 */
export async function bookSnapshotRows(view: LogView, input: SnapshotInput, sink: RowSink): Promise<{ rows: number; setAside: number }> {
  const I = SNAPSHOT_INTERVAL_MS;
  const dayStart = dayStartMs(input.day)!;
  const dayEnd = dayStart + DAY_MS;
  const mode = snapshotBooksOf(input.family);
  const order = [...input.outcomes.keys()];
  const tokens = mode === 'every_outcome' ? order : mode === 'first_outcome' ? order.slice(0, 1) : [];
  const none = { rows: 0, setAside: 0 };
  if (mode !== 'yesno' && tokens.length === 0) return none; // no catalogue entry: no outcome to name
  const first = await view.first();
  const last = await view.latest();
  if (!first || !last) return none;
  const lo = alignUp(Math.max(dayStart, first.rec.recv_ts), I);
  // What happened after the log's last record is not known, unless the log goes on past the day.
  const dataEnd = last.rec.recv_ts >= dayEnd ? dayEnd : last.rec.recv_ts + 1;
  if (lo >= dayEnd) return none;

  const state = new SampledBooks(mode, tokens);
  const rows = new RowWriter(input, sink, mode, tokens);
  let written = 0;
  const ahead = new GapLookahead();
  const grid = new IntervalGrid(I, lo, Math.min(dayEnd, dataEnd), { served: (bs) => void (written += rows.write(bs, state)) }, ahead);
  const cp = await view.checkpointAtOrBefore(lo - 1);
  if (cp) await state.seedFrom(view, cp.pos);
  // Past midnight up to the lookahead and one record: a gap written the next day (a restart, or one
  // noticed late) may spoil the day's end.
  const records = view.replay(cp ? { pos: cp.pos } : 'start', dataEnd < dayEnd ? { until: dataEnd } : {});
  for await (const { rec } of readingAhead(records, (x) => x.rec, ahead)) {
    grid.advance(rec.recv_ts, state, rec.type === 'gap' ? rec.start_ts : Infinity);
    if (grid.done) break;
    const was = state.valid();
    state.apply(rec);
    grid.noteApplied(was, state);
  }
  grid.advance(Infinity, state);
  return { rows: written, setAside: rows.setAside };
}

/** Writes the rows of one valid second, re-encoding a book's levels only when that book changed. */
class RowWriter {
  private readonly scales: { price: number; size: number };
  private readonly memo = new Map<string, Encoded>();
  private readonly col: (name: string) => number;
  private readonly levelCols: { bidPrice: number[]; bidSize: number[]; askPrice: number[]; askSize: number[] };
  private readonly at: { bucket: number; recv: number; source: number; seq: number; recorder: number };
  /** Rows left out: their book held a value the columns cannot hold exactly. */
  setAside = 0;

  constructor(
    private readonly input: SnapshotInput,
    private readonly sink: RowSink,
    private readonly mode: string,
    private readonly tokens: readonly string[],
  ) {
    this.scales = scalesOf(input.family);
    this.col = (name) => {
      const i = sink.indexOf(name);
      if (i < 0) throw new Error(`book_snapshots has no column ${name}`);
      return i;
    };
    const [bid, ask] = mode === 'yesno' ? ['yes', 'no'] : ['bid', 'ask'];
    const n = (p: string): number[] => Array.from({ length: SNAPSHOT_DEPTH }, (_, i) => this.col(`${p}_${i}`));
    this.levelCols = { bidPrice: n(`${bid}_price`), bidSize: n(`${bid}_size`), askPrice: n(`${ask}_price`), askSize: n(`${ask}_size`) };
    this.at = {
      bucket: this.col('bucket_start'),
      recv: this.col('receive_time'),
      source: this.col('source_time'),
      seq: this.col('seq'),
      recorder: this.col('recorder'),
    };
  }

  write(bucketStart: number, state: SampledBooks): number {
    const at = state.lastBook!;
    if (this.mode === 'yesno') {
      const b = state.yesnoBook!;
      return this.tryEmit(bucketStart, at, () => this.encode('', null, b.yes, b.no, b.units));
    }
    let n = 0;
    for (const token of this.tokens) {
      const v = state.books.view(token); // the same arrays until the token's book changes
      if (!v) continue;
      n += this.tryEmit(bucketStart, at, () => this.encode(token, token, v.bids, v.asks, null));
    }
    return n;
  }

  /** Emits the row, or counts it left out when its book holds a value its columns cannot hold. */
  private tryEmit(bucketStart: number, at: Recorded, enc: () => Encoded): number {
    let e: Encoded;
    try {
      e = enc();
    } catch (err) {
      if (!(err instanceof DecimalError)) throw err;
      this.setAside++;
      return 0;
    }
    this.emit(bucketStart, at, e);
    return 1;
  }

  private emit(bucketStart: number, at: Recorded, enc: Encoded): void {
    const row = enc.row;
    row[this.at.bucket] = bucketStart;
    row[this.at.recv] = at.recv_ts;
    row[this.at.source] = at.source_ts;
    row[this.at.seq] = at.seq;
    row[this.at.recorder] = at.recorder ?? null; // a merged day: the recorder whose book the row shows
    this.sink.emitRow(row);
  }

  private encode(key: string, token: string | null, bids: Ladder, asks: Ladder, units: 'dollars' | 'cents' | null): Encoded {
    const hit = this.memo.get(key);
    if (hit && hit.bids === bids && hit.asks === asks) return hit;
    const { price, size } = this.scales;
    const where = `market ${this.input.market}`;
    let row: unknown[];
    if (hit)
      row = hit.row.slice(); // the same book changed: only its changed levels are encoded again
    else {
      row = new Array<unknown>(this.sink.specs.length).fill(null);
      row[this.col('market_id')] = this.input.market;
      row[this.col('token_id')] = token;
      row[this.col('outcome')] = token === null ? null : (this.input.outcomes.get(token) ?? null);
    }
    if (units !== null) row[this.col('units')] = units;
    // A book's unchanged levels are the same [price, size] arrays from one view to the next (and
    // a yes/no poll's ladder is new throughout), so a level equal by identity at the same depth is
    // already encoded in the copied row.
    const side = (l: Ladder, was: Ladder | null, prices: number[], sizes: number[]): void => {
      if (l === was) return;
      for (let i = 0; i < SNAPSHOT_DEPTH; i++) {
        if (i >= l.length) {
          row[prices[i]] = null;
          row[sizes[i]] = null;
        } else if (was === null || was[i] !== l[i]) {
          row[prices[i]] = encodeDecimal(l[i][0], price, where, LEVEL_FIELDS[i].price).unscaled;
          row[sizes[i]] = encodeDecimal(l[i][1], size, where, LEVEL_FIELDS[i].size).unscaled;
        }
      }
    };
    const c = this.levelCols;
    side(bids, hit?.bids ?? null, c.bidPrice, c.bidSize);
    side(asks, hit?.asks ?? null, c.askPrice, c.askSize);
    const bestBid = bids[0] ? BigInt(encodeDecimal(bids[0][0], price, where).unscaled) : null;
    let bestAsk = asks[0] ? BigInt(encodeDecimal(asks[0][0], price, where).unscaled) : null;
    // Yes/no: both ladders are bids; the yes ask implied by the best no bid is one dollar (100 cents) less it.
    if (units !== null && bestAsk !== null) bestAsk = (units === 'cents' ? 100n : 1n) * 10n ** BigInt(price) - bestAsk;
    const small = (b: bigint | null): Unscaled | null =>
      b === null ? null : b <= BigInt(Number.MAX_SAFE_INTEGER) && b >= -BigInt(Number.MAX_SAFE_INTEGER) ? Number(b) : b;
    row[this.col('best_bid')] = small(bestBid);
    row[this.col('best_ask')] = small(bestAsk);
    // (bid + ask) / 2 at one more decimal: (bid + ask) × 10 / 2, exact.
    row[this.col('mid')] = bestBid !== null && bestAsk !== null ? small((bestBid + bestAsk) * 5n) : null;
    const enc = { bids, asks, row };
    this.memo.set(key, enc);
    return enc;
  }
}
