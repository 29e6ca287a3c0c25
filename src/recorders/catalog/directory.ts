// The coin market directory of one record process: the `catalog` recorder fills it, the `clob`
// recorder follows it to decide which outcome tokens to subscribe. Shared through deps.shared.

import { EventEmitter } from 'node:events';
import type { CoinMarket } from '../../schema/market.js';
import type { RecorderDeps } from '../recorder.js';

export class CoinDirectory extends EventEmitter {
  private readonly markets = new Map<string, CoinMarket>();

  /** Stores the newest state of a market; emits `change` (with the market) when it differs. */
  upsert(m: CoinMarket): void {
    this.markets.set(m.market_id, m);
    this.emit('change', m);
  }

  get(marketId: string): CoinMarket | undefined {
    return this.markets.get(marketId);
  }

  all(): CoinMarket[] {
    return [...this.markets.values()];
  }

  delete(marketId: string): void {
    this.markets.delete(marketId);
  }
}

/** The process's directory (created on first use). */
export function coinDirectory(deps: RecorderDeps): CoinDirectory {
  let d = deps.shared.get('coin-directory') as CoinDirectory | undefined;
  if (!d) {
    d = new CoinDirectory();
    d.setMaxListeners(50);
    deps.shared.set('coin-directory', d);
  }
  return d;
}
