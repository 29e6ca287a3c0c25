// The `markets` dataset: one row per market recorded on the day (books or catalogue), with every
// identifier and label, its window, status and result as the catalogue stood when the day was
// compacted, and the first and last time its books were recorded. The newest partition holding a
// market has its newest state, so one join (docs/datasets.md) puts the winning outcome beside any row.

import type { Market } from '../../schema/market.js';
import { marketOutcome } from '../../schema/market-outcome.js';
import type { Family } from '../../schema/observation.js';
import { compositeReader } from '../read/composite-reader.js';
import { openLogReader } from '../read/reader.js';
import type { ColumnSpec } from './columns.js';
import type { RowSink } from './rows.js';

const c = (name: string, kind: ColumnSpec['kind'], nullable: boolean, doc: string): ColumnSpec => ({ name, kind, nullable, doc });
const txt = (name: string, doc: string): ColumnSpec => c(name, 'utf8', true, doc);
const ts = (name: string, doc: string): ColumnSpec => c(name, 'ts', true, doc);

/** The same columns in every family (a field a family does not have is null). */
export const MARKETS_COLUMNS: readonly ColumnSpec[] = [
  c('market_id', 'utf8', false, 'market id (the ticker for yes/no): what every other dataset names the market by'),
  c('receive_time', 'ts', false, 'receive time of the catalogue event the row shows (the newest when the day was compacted)'),
  c('source_time', 'ts', true, "the venue's time of that event, null when it gave none"),
  c('seq', 'int64', false, 'seq of that event in the market\'s catalogue log (0 when the market has books but no catalogue entry)'),
  txt('condition_id', 'condition id (coin, wallet-prediction)'), txt('event_id', 'upstream event id (coin)'), txt('topic_id', 'topic id (wallet-prediction)'),
  txt('slug', 'upstream slug'), txt('ticker', 'ticker (yes/no)'), txt('event_ticker', 'event ticker (yes/no)'), txt('series_ticker', 'series ticker (yes/no)'),
  txt('title', 'question (coin) or title (yes/no)'), txt('coin', 'underlying coin'), txt('window', 'market window (`5m`, `15m`, ...)'),
  c('outcome_labels', 'list_utf8', true, 'outcome labels, first outcome first (yes/no: null; its outcomes are `yes` and `no`)'),
  c('outcome_token_ids', 'list_utf8', true, 'outcome token ids, matching `outcome_labels`'),
  ts('start_time', 'market start (yes/no: open time)'), ts('end_time', 'market end (yes/no: close time)'),
  txt('status', 'status (`upcoming`, `open`, `closed`, `resolved`, `cancelled`; yes/no: the venue\'s own word)'),
  txt('resolution', '`resolved`, `push`, `pending`, `disputed`, or null while unresolved (yes/no: `resolved` once it has a result)'),
  txt('winning_outcome', 'label of the winning outcome (yes/no: `yes` or `no`), null when none'),
  ts('resolved_time', 'when it resolved, null when not known'),
  ts('first_recorded_time', 'first receive time of its books (null: no book recorded)'),
  ts('last_recorded_time', 'last receive time of its books when the day was compacted'),
];

const field = (m: Market, k: string): unknown => (m as unknown as Record<string, unknown>)[k] ?? null;

/** Appends the market's row to `sink` (nothing when neither its catalogue nor its books have a record). */
export async function marketRow(dataDir: string, family: Family, market: string, sink: RowSink): Promise<number> {
  const cat = await compositeReader(dataDir, { family, stream: 'catalog', market }, openLogReader(dataDir, { family, stream: 'catalog', market })).latest();
  const bookKey = { family, stream: 'books', market } as const;
  const books = await compositeReader(dataDir, bookKey, openLogReader(dataDir, bookKey)).view();
  const first = await books.first();
  const last = await books.latest();
  const m = cat?.rec.type === 'catalog' ? cat.rec.market : null;
  if (!m && !first) return 0;
  sink.reset();
  sink.set('market_id', market);
  sink.set('receive_time', cat?.rec.recv_ts ?? first!.rec.recv_ts);
  sink.set('source_time', cat?.rec.source_ts ?? null);
  sink.set('seq', cat?.rec.seq ?? 0);
  if (m) {
    for (const k of ['condition_id', 'event_id', 'topic_id', 'slug', 'ticker', 'event_ticker', 'series_ticker', 'coin', 'window']) sink.set(k, field(m, k));
    sink.set('title', field(m, 'question') ?? field(m, 'title'));
    if ('outcomes' in m) {
      sink.set('outcome_labels', m.outcomes.map((o) => o.label));
      sink.set('outcome_token_ids', m.outcomes.map((o) => o.token_id));
    }
    sink.set('start_time', field(m, 'start_time') ?? field(m, 'open_time'));
    sink.set('end_time', field(m, 'end_time') ?? field(m, 'close_time'));
    const o = marketOutcome(m);
    sink.set('status', o.status);
    sink.set('resolution', o.resolution);
    sink.set('winning_outcome', o.winning_outcome);
    sink.set('resolved_time', o.resolved_time);
  }
  sink.set('first_recorded_time', first?.rec.recv_ts ?? null);
  sink.set('last_recorded_time', last?.rec.recv_ts ?? null);
  sink.emit();
  return 1;
}
