// Stored records → rows of the schema-version-2 datasets (schema.ts). Lossless by construction:
// records.ts turns these rows back into the same records, and anything that could not come back
// exactly (a price text that is not a plain decimal, a time finer than a microsecond, a catalogue
// field of an unexpected type) stops compaction with a message naming market, seq and value.

import type { Family, Ladder, Recorded } from '../../schema/observation.js';
import { DecimalError, encodeDecimal } from './decimal.js';
import { scalesOf, type Dataset } from './schema.js';

export type Row = Record<string, unknown>;

/** A stored record and whether its log frame was checkpoint-marked. */
export interface SourceRecord {
  readonly rec: Recorded;
  readonly checkpoint: boolean;
}

/** What rows need beyond the records: token id → outcome label (from the market's catalogue). */
export interface RowContext {
  readonly outcomes: ReadonlyMap<string, string>;
}

const where = (market: string, seq: number): string => `market ${market} seq ${seq}`;

/** A time in epoch ms that a TIMESTAMP(MICROS) holds exactly (whole microseconds). */
function exactTime(ms: number, market: string, seq: number, field: string): number {
  if (typeof ms !== 'number' || !Number.isFinite(ms) || Math.round(ms * 1000) / 1000 !== ms) {
    throw new DecimalError(`${where(market, seq)}: ${field} ${JSON.stringify(ms)} is not a whole number of microseconds; TIMESTAMP(MICROS) cannot hold it exactly`);
  }
  return ms;
}

function base(market: string, r: Recorded, checkpoint: boolean): Row {
  return {
    market_id: market,
    receive_time: exactTime(r.recv_ts, market, r.seq, 'receive_time'),
    source_time: r.source_ts === null ? null : exactTime(r.source_ts, market, r.seq, 'source_time'),
    seq: r.seq,
    origin: r.origin ?? null,
    import_id: r.import_id ?? null,
    checkpoint,
  };
}

/** Sets `<name>` and `<name>_decimals` on a row from decimal text (null/undefined → nulls). */
function putDec(row: Row, name: string, text: string | undefined | null, scale: number, w: string): void {
  if (text === undefined || text === null) return;
  const e = encodeDecimal(text, scale, `${w} ${name}`);
  row[name] = e.unscaled;
  row[`${name}_decimals`] = e.form;
}

function bookRows(family: Family, market: string, sr: SourceRecord, ctx: RowContext, out: Row[]): void {
  const { rec: r, checkpoint } = sr;
  const sc = scalesOf(family);
  const w = where(market, r.seq);
  const b = base(market, r, checkpoint);
  b.record_type = r.type;
  const level = (extra: Row, side: string | null, price?: string, size?: string): void => {
    const row: Row = { ...b, ...extra, side };
    putDec(row, 'price', price, sc.price, w);
    putDec(row, 'size', size, sc.size, w);
    out.push(row);
  };
  /** A full book's ladders: one row per level, or one price-null row for an empty side. */
  const ladder = (extra: Row, side: string, l: Ladder): void => {
    if (l.length === 0) level(extra, side);
    for (const [p, s] of l) level(extra, side, p, s);
  };
  const n0 = out.length;
  switch (r.type) {
    case 'book': {
      const extra: Row = { token_id: r.token_id, outcome: ctx.outcomes.get(r.token_id) ?? null, is_snapshot: true, units: r.units, version: r.version ?? null, hash: r.hash ?? null };
      ladder(extra, 'bid', r.bids);
      ladder(extra, 'ask', r.asks);
      break;
    }
    case 'book_checkpoint':
      for (const bk of r.books) {
        const extra: Row = { token_id: bk.token_id, outcome: ctx.outcomes.get(bk.token_id) ?? null, is_snapshot: true, units: r.units };
        ladder(extra, 'bid', bk.bids);
        ladder(extra, 'ask', bk.asks);
      }
      if (r.books.length === 0) level({ token_id: null, outcome: null, is_snapshot: true, units: r.units }, null);
      break;
    case 'book_delta': {
      const extra: Row = { token_id: r.token_id, outcome: ctx.outcomes.get(r.token_id) ?? null, is_snapshot: false };
      putDec(extra, 'best_bid', r.best_bid, sc.price, w);
      putDec(extra, 'best_ask', r.best_ask, sc.price, w);
      for (const ch of r.changes) level(extra, ch.side, ch.price, ch.size);
      if (r.changes.length === 0) level(extra, null);
      break;
    }
    case 'tick_size':
      level({ token_id: r.token_id, outcome: ctx.outcomes.get(r.token_id) ?? null, is_snapshot: false }, null, r.new_tick_size, r.old_tick_size);
      break;
    case 'yesno_book': {
      const extra = (o: string): Row => ({ token_id: null, outcome: o, is_snapshot: true, units: r.units, poll_interval_ms: r.poll_interval_ms ?? null });
      ladder(extra('yes'), 'yes', r.yes);
      ladder(extra('no'), 'no', r.no);
      break;
    }
    default:
      return;
  }
  if (out.length === n0) throw new Error(`${w}: a ${r.type} record produced no row`);
}

function tradeRow(family: Family, market: string, sr: SourceRecord, ctx: RowContext): Row | null {
  const r = sr.rec;
  if (r.type !== 'trade') return null;
  const sc = scalesOf(family);
  const w = where(market, r.seq);
  const row: Row = { ...base(market, r, sr.checkpoint), token_id: r.token_id, outcome: ctx.outcomes.get(r.token_id) ?? null, side: r.side ?? null, tx_hash: r.tx_hash ?? null };
  putDec(row, 'price', r.price, sc.price, w);
  putDec(row, 'size', r.size, sc.size, w);
  putDec(row, 'fee_rate_bps', r.fee_rate_bps, 8, w);
  return row;
}

function gapRow(market: string, sr: SourceRecord): Row | null {
  const r = sr.rec;
  if (r.type !== 'gap') return null;
  return {
    ...base(market, r, sr.checkpoint), reason: r.reason,
    start_time: exactTime(r.start_ts, market, r.seq, 'start_time'),
    end_time: r.end_ts === null ? null : exactTime(r.end_ts, market, r.seq, 'end_time'),
    token_id: r.token_id ?? null, detail: r.detail ?? null,
  };
}

function metricRow(market: string, sr: SourceRecord): Row | null {
  const r = sr.rec;
  if (r.type !== 'metric') return null;
  if (typeof r.value !== 'number') throw new DecimalError(`${where(market, r.seq)}: metric value ${JSON.stringify(r.value)} is not a number`);
  return { ...base(market, r, sr.checkpoint), metric: r.metric, outcome: r.outcome, token_id: r.token_id ?? null, value: r.value };
}

/** Market fields of each family's catalogue entry and how they are stored (see records.ts). */
export const CATALOG_FIELDS: Record<Family, readonly string[]> = {
  coin: ['family', 'market_id', 'event_id', 'condition_id', 'slug', 'question', 'outcomes', 'coin', 'window', 'start_time', 'end_time',
    'created_time', 'updated_time', 'status', 'resolution', 'winning_outcome', 'resolved_time', 'volume', 'liquidity', 'native'],
  'wallet-prediction': ['family', 'topic_id', 'market_id', 'condition_id', 'slug', 'outcomes', 'coin', 'window', 'start_time', 'end_time',
    'created_time', 'updated_time', 'status', 'resolution', 'winning_outcome', 'resolved_time', 'volume', 'liquidity', 'participants',
    'chain', 'start_price', 'end_price', 'native'],
  'yesno-exchange': ['family', 'market_id', 'ticker', 'event_ticker', 'series_ticker', 'title', 'status', 'open_time', 'close_time', 'result', 'native'],
};
export const TIME_FIELDS = new Set(['start_time', 'end_time', 'created_time', 'updated_time', 'resolved_time', 'open_time', 'close_time']);
export const NUMBER_FIELDS = new Set(['volume', 'liquidity', 'participants', 'start_price', 'end_price']);

function catalogRow(family: Family, market: string, sr: SourceRecord): Row | null {
  const r = sr.rec;
  if (r.type !== 'catalog') return null;
  const w = where(market, r.seq);
  const m = r.market as unknown as Record<string, unknown>;
  const known = new Set(CATALOG_FIELDS[family]);
  const row: Row = { ...base(market, r, sr.checkpoint), event: r.event, changed: [...r.changed], fields: Object.keys(m) };
  const bad = (k: string, why: string): never => { throw new DecimalError(`${w}: catalogue field ${k} = ${JSON.stringify(m[k])} ${why}`); };
  for (const [k, v] of Object.entries(m)) {
    if (!known.has(k)) bad(k, `is not a ${family} catalogue field`);
    if (k === 'family') { if (v !== family) bad(k, `is not ${family}`); continue; }
    if (k === 'market_id') { if (v !== market) bad(k, `differs from the log's market ${market}`); continue; }
    if (k === 'native') { row.native = JSON.stringify(v ?? null); continue; }
    if (k === 'outcomes') {
      const list = v as { label: string; token_id: string }[] | null;
      if (list !== null && (!Array.isArray(list) || list.some((o) => typeof o?.label !== 'string' || typeof o?.token_id !== 'string' || Object.keys(o).join() !== 'label,token_id'))) {
        bad(k, 'is not a list of {label, token_id}');
      }
      row.outcome_labels = list?.map((o) => o.label) ?? null;
      row.outcome_token_ids = list?.map((o) => o.token_id) ?? null;
      continue;
    }
    if (k === 'chain') {
      const ch = v as { chain_id: number; exchange_contract: string } | null;
      if (ch !== null && (typeof ch !== 'object' || Object.keys(ch).join() !== 'chain_id,exchange_contract' || !Number.isSafeInteger(ch.chain_id) || typeof ch.exchange_contract !== 'string')) {
        bad(k, 'is not {chain_id, exchange_contract}');
      }
      // A null chain is told apart from an absent one by `fields`; chain_id/exchange_contract null.
      row.chain_id = ch?.chain_id ?? null;
      row.exchange_contract = ch?.exchange_contract ?? null;
      continue;
    }
    if (v === null) { row[k] = null; continue; }
    if (TIME_FIELDS.has(k)) row[k] = exactTime(v as number, market, r.seq, k);
    else if (NUMBER_FIELDS.has(k)) {
      if (typeof v !== 'number' || (k === 'participants' && !Number.isSafeInteger(v))) bad(k, 'is not a number of the column type');
      row[k] = v;
    } else if (typeof v !== 'string') bad(k, 'is not text');
    else row[k] = v;
  }
  return row;
}

/** Turns one market's records (in seq order) into rows of `dataset`. */
export function rowsOf(family: Family, dataset: Dataset, market: string, recs: Iterable<SourceRecord>, ctx: RowContext): Row[] {
  const out: Row[] = [];
  for (const sr of recs) {
    let row: Row | null = null;
    switch (dataset) {
      case 'book_changes': bookRows(family, market, sr, ctx, out); continue;
      case 'trades': row = tradeRow(family, market, sr, ctx); break;
      case 'gaps': row = gapRow(market, sr); break;
      case 'metrics': row = metricRow(market, sr); break;
      case 'catalog': row = catalogRow(family, market, sr); break;
    }
    if (row) out.push(row);
  }
  return out;
}

/** Record types each books-stream dataset holds (a record of any other type cannot be stored). */
export const BOOK_CHANGE_TYPES = new Set(['book', 'book_delta', 'book_checkpoint', 'tick_size', 'yesno_book']);
