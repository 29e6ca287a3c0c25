// The `markets` dataset: one row per market recorded on the day (books or catalogue), with every
// identifier and label, its window, status and result as the catalogue stood when the day was
// compacted, and the first and last time its books were recorded. The newest partition holding a
// market has its newest state, so one join (docs/datasets.md) puts the winning outcome beside any row.

import type { Market } from '../../schema/market.js';
import { marketOutcome } from '../../schema/market-outcome.js';
import type { Family } from '../../schema/observation.js';
import { compositeReader } from '../read/composite-reader.js';
import { openLogReader } from '../read/reader.js';
import type { RowSink } from '../parquet/rows.js';

const field = (m: Market, k: string): unknown => (m as unknown as Record<string, unknown>)[k] ?? null;

/** Appends the market's row to `sink` (nothing when neither its catalogue nor its books have a record). */
export async function marketRow(dataDir: string, family: Family, market: string, sink: RowSink): Promise<number> {
  const cat = await compositeReader(
    dataDir,
    { family, stream: 'catalog', market },
    openLogReader(dataDir, { family, stream: 'catalog', market }),
  ).latest();
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
    for (const k of ['condition_id', 'event_id', 'topic_id', 'slug', 'ticker', 'event_ticker', 'series_ticker', 'coin', 'window'])
      sink.set(k, field(m, k));
    sink.set('title', field(m, 'question') ?? field(m, 'title'));
    if ('outcomes' in m) {
      sink.set(
        'outcome_labels',
        m.outcomes.map((o) => o.label),
      );
      sink.set(
        'outcome_token_ids',
        m.outcomes.map((o) => o.token_id),
      );
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
