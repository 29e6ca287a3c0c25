// The read side's seeded data set (helpers.ts) written without waiting for an fsync per record:
// the same records, appended in one group commit per log, so compaction tests stay fast.

import { openWriter } from '../../src/storage/index.js';
import type { Family, Observation, StreamName } from '../../src/schema/observation.js';
import { bookRecords, catalog, coinMarket, T0, walletMarket, yesnoMarket, yesnoRecords } from './helpers.js';

async function writeLog(dataDir: string, family: Family, stream: StreamName, market: string, recs: Observation[]): Promise<void> {
  const w = await openWriter(dataDir, { family, stream, market }, { fsyncIntervalMs: 5, fsyncMaxRecords: 100_000 });
  const acks = recs.map((r) => w.append(r, r.type === 'book_checkpoint' ? { checkpoint: true } : undefined));
  await Promise.all(acks);
  await w.close();
}

export async function seedAllFast(dataDir: string): Promise<void> {
  await writeLog(dataDir, 'coin', 'catalog', coinMarket.market_id, [catalog(coinMarket, T0 - 1000)]);
  await writeLog(dataDir, 'coin', 'books', coinMarket.market_id,
    bookRecords(['1111', '2222'], { start: T0, n: 400, stepMs: 250, cpEvery: 50, gapAt: T0 + 40_000, gapMs: 10_000, trades: true }));
  await writeLog(dataDir, 'wallet-prediction', 'catalog', walletMarket.market_id, [catalog(walletMarket, T0 - 2000)]);
  await writeLog(dataDir, 'wallet-prediction', 'books', walletMarket.market_id,
    bookRecords(['7001'], { start: T0, n: 300, stepMs: 200, cpEvery: 40, seed: 7 }));
  const metrics: Observation[] = [];
  for (let i = 0; i < 90; i++) {
    const metric = (['chance', 'price', 'last_trade'] as const)[i % 3];
    metrics.push({ type: 'metric', metric, outcome: i % 2 ? 'Down' : 'Up', value: 0.5 + i / 1000, recv_ts: T0 + i * 1000, source_ts: T0 + i * 1000 - 10 });
  }
  await writeLog(dataDir, 'wallet-prediction', 'metrics', walletMarket.market_id, metrics);
  await writeLog(dataDir, 'yesno-exchange', 'catalog', yesnoMarket.market_id, [catalog(yesnoMarket, T0 - 3000)]);
  await writeLog(dataDir, 'yesno-exchange', 'books', yesnoMarket.market_id, yesnoRecords(T0, 60, 1000));
}
