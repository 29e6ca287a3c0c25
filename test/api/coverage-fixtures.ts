// What the coverage tests share: a coin market named by its id, a market's spans as reading its
// logs and partitions says (first()/latest(), never the coverage cache's summary path: the answer
// the cache must equal), a data dir with closed markets' logs, and a cold coverage page (a fresh
// server each time, so its cache knows nothing).

import { datasetSpan } from '../../src/api/query/coverage.js';
import { openReader } from '../../src/storage/testing.js';
import type { CoinMarket } from '../../src/schema/market.js';
import type { StreamName } from '../../src/schema/observation.js';
import { bookRecords, catalog, coinMarket, keysFor, testApp, testConfig, writeLog } from './helpers.js';
import type { Test } from 'tap';

export type Spans = Record<string, unknown>;

/** A coin market whose ids and slug are all `id`. */
export const coinMarketNamed = (id: string): CoinMarket => ({ ...coinMarket, market_id: id, condition_id: `0x${id}`, slug: id });

/** What the coverage cache reads a market's streams with. */
export const spanReader = (dir: string, id: string) => (s: StreamName) =>
  Promise.resolve(openReader(dir, { family: 'coin', stream: s, market: id }));

/** A market's books, metrics and catalog spans as read from every day's logs and partitions. */
export async function readSpans(dir: string, id: string): Promise<Spans> {
  const out: Spans = {};
  for (const s of ['books', 'metrics', 'catalog'] as StreamName[]) {
    const r = openReader(dir, { family: 'coin', stream: s, market: id });
    out[s] = await datasetSpan({ ...r, span: undefined, first: () => r.first(), latest: () => r.latest() });
  }
  return out;
}

export interface ClosedMarketsOptions {
  /** The first market's first book; market i starts `i * spreadMs` later. */
  readonly t0: number;
  readonly spreadMs: number;
  /** Books of market i: `n + i * nStep`, one every 100 ms. */
  readonly n: number;
  readonly nStep: number;
  /** Both outcome books (default: the up book only). */
  readonly bothOutcomes?: boolean;
  readonly cpEvery?: number;
}

/** Each market's catalogue entry (at t0 + i ms) and its books logs, through the real writer. */
export async function writeMarkets(dir: string, ids: readonly string[], o: ClosedMarketsOptions): Promise<void> {
  for (const [i, id] of ids.entries()) {
    await writeLog(dir, 'coin', 'catalog', id, [catalog(coinMarketNamed(id), o.t0 + i)]);
    const tokens = o.bothOutcomes ? [`${id}-up`, `${id}-down`] : [`${id}-up`];
    const opts = { start: o.t0 + o.spreadMs * i, n: o.n + o.nStep * i, stepMs: 100, ...(o.cpEvery ? { cpEvery: o.cpEvery } : {}) };
    await writeLog(dir, 'coin', 'books', id, bookRecords(tokens, opts));
  }
}

/** `/v3/coverage?family=coin` from a fresh server (a cold cache): its status and each market's datasets. */
export async function coldCoveragePage(t: Test, dir: string): Promise<{ status: number; spans: Record<string, Spans> }> {
  const keys = await keysFor(dir);
  const app = await testApp(t, testConfig(dir));
  const res = await app.inject({ url: '/v3/coverage?family=coin&limit=1000', headers: { authorization: `Bearer ${keys.paid}` } });
  await app.close();
  if (res.statusCode !== 200) return { status: res.statusCode, spans: {} };
  const data = res.json<{ data: { market_id: string; datasets: Spans }[] }>().data;
  return { status: 200, spans: Object.fromEntries(data.map((d) => [d.market_id, d.datasets])) };
}
