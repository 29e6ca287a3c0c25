// The columns of the `markets` dataset (markets-dataset.ts fills them), apart from the code that
// reads the logs: schema.ts imports them, and the readers import schema.ts.

import type { ColumnSpec } from './columns.js';

const c = (name: string, kind: ColumnSpec['kind'], nullable: boolean, doc: string): ColumnSpec => ({ name, kind, nullable, doc });
const txt = (name: string, doc: string): ColumnSpec => c(name, 'utf8', true, doc);
const ts = (name: string, doc: string): ColumnSpec => c(name, 'ts', true, doc);

/** The same columns in every family (a field a family does not have is null). */
export const MARKETS_COLUMNS: readonly ColumnSpec[] = [
  c('market_id', 'utf8', false, 'market id (the ticker for yes/no): what every other dataset names the market by'),
  c('receive_time', 'ts', false, 'receive time of the catalogue event the row shows (the newest when the day was compacted)'),
  c('source_time', 'ts', true, "the venue's time of that event, null when it gave none"),
  c('seq', 'int64', false, "seq of that event in the market's catalogue log (0 when the market has books but no catalogue entry)"),
  txt('condition_id', 'condition id (coin, wallet-prediction)'),
  txt('event_id', 'upstream event id (coin)'),
  txt('topic_id', 'topic id (wallet-prediction)'),
  txt('slug', 'upstream slug'),
  txt('ticker', 'ticker (yes/no)'),
  txt('event_ticker', 'event ticker (yes/no)'),
  txt('series_ticker', 'series ticker (yes/no)'),
  txt('title', 'question (coin) or title (yes/no)'),
  txt('coin', 'underlying coin'),
  txt('window', 'market window (`5m`, `15m`, ...)'),
  c('outcome_labels', 'list_utf8', true, 'outcome labels, first outcome first (yes/no: null; its outcomes are `yes` and `no`)'),
  c('outcome_token_ids', 'list_utf8', true, 'outcome token ids, matching `outcome_labels`'),
  ts('start_time', 'market start (yes/no: open time)'),
  ts('end_time', 'market end (yes/no: close time)'),
  txt('status', "status (`upcoming`, `open`, `closed`, `resolved`, `cancelled`; yes/no: the venue's own word)"),
  txt('resolution', '`resolved`, `push`, `pending`, `disputed`, or null while unresolved (yes/no: `resolved` once it has a result)'),
  txt('winning_outcome', 'label of the winning outcome (yes/no: `yes` or `no`), null when none'),
  ts('resolved_time', 'when it resolved, null when not known'),
  ts('first_recorded_time', 'first receive time of its books (null: no book recorded)'),
  ts('last_recorded_time', 'last receive time of its books when the day was compacted'),
];
