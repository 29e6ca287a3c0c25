// The catalogue as it stood at an instant (`/markets?as_of=T`), from each market's catalogue log:
// its newest event received at or before T (every change is an event carrying the whole entry), so
// status, labels, window and the venue's own fields (tick size is in `native`) are those of T. A
// market first listed after T is not in the answer.

import type { Family } from '../../schema/observation.js';
import type { LogReader } from '../../storage/index.js';
import type { IndexedMarket } from './markets-index.js';

/** `entries` as of `t`: each market's entry from its newest catalogue event with recv_ts ≤ t. */
export async function catalogAsOf(
  entries: readonly IndexedMarket[],
  t: number,
  reader: (family: Family, id: string) => Promise<LogReader>,
): Promise<IndexedMarket[]> {
  const out: IndexedMarket[] = [];
  for (const e of entries) {
    if (e.first_ts > t) continue;
    const view = await (await reader(e.market.family, e.market.market_id)).view();
    let at: IndexedMarket['market'] | null = null;
    for await (const chunk of view.records('start', { until: t + 1 })) {
      for (let i = 0; i < chunk.length; i++) {
        const rec = chunk.record(i);
        if (rec.type === 'catalog') at = rec.market;
      }
    }
    if (at !== null) out.push({ ...e, market: at });
  }
  return out;
}
