// The one catalogue diff of every family: the event taking a market's last recorded state to its
// newest, or null when no tracked field changed (so an unchanged poll writes nothing). Families
// differ only in their rules: which fields are tracked, what settles a market, which venue time.

import type { Market } from '../schema/market.js';
import type { CatalogEvent, CatalogEventKind } from '../schema/observation.js';
import type { LogKey } from '../storage/index.js';
import type { LogSink } from './sink.js';

export interface CatalogRules<M extends Market> {
  /** Fields whose change is a catalogue event (prices, volumes that move every poll, `native`: not). */
  readonly tracked: readonly string[];
  /** A tracked field's value (default: the market's own field). */
  readonly value?: (m: M, field: string) => unknown;
  /** Does this change settle the market (event `resolved`)? */
  readonly resolves: (prev: M, next: M, changed: readonly string[]) => boolean;
  /** The venue time of the new state, or null when the venue gives none. */
  readonly sourceTs: (m: M) => number | null;
}

/**
 * `listed` is a market's first event: there was no previous state, so every tracked field is new
 * and `changed` names all of them. Later events: `resolved` when the family's rule says the market
 * settled, `status` when the status changed, `updated` otherwise. Catalogues come from upstream REST
 * (`origin: 'rest'`); the import driver re-stamps imported ones.
 */
export function catalogChange<M extends Market>(rules: CatalogRules<M>, prev: M | null, next: M, recvTs: number): CatalogEvent | null {
  const value = rules.value ?? ((m: M, f: string): unknown => (m as unknown as Record<string, unknown>)[f]);
  let event: CatalogEventKind;
  let changed: string[];
  if (prev === null) {
    event = 'listed';
    changed = [...rules.tracked];
  } else {
    changed = rules.tracked.filter((f) => JSON.stringify(value(prev, f)) !== JSON.stringify(value(next, f)));
    if (changed.length === 0) return null;
    event = rules.resolves(prev, next, changed) ? 'resolved' : changed.includes('status') ? 'status' : 'updated';
  }
  return { type: 'catalog', recv_ts: recvTs, source_ts: rules.sourceTs(next), origin: 'rest', event, changed, market: next };
}

/**
 * Markets whose newest catalogue event the sink did not write (a writer paused on a full disk drops
 * what it is given; a failed write resolves null too). Their next observation is diffed against the
 * log again instead of the state in memory, so the change (a resolution, say) is written once the
 * disk takes writes, instead of being lost for good: memory already held it, and no later poll
 * would see a difference.
 */
export class UnwrittenCatalog {
  private readonly ids = new Set<string>();

  /** Appends `ev` to the market's catalog log; resolves true when it was written. */
  async append(sink: Pick<LogSink, 'append'>, key: LogKey, ev: CatalogEvent): Promise<boolean> {
    const written = (await sink.append(key, ev)) !== null;
    if (written) this.ids.delete(key.market);
    else this.ids.add(key.market);
    return written;
  }

  /** True when the market's log may lack its newest change: take its previous state from the log. */
  stale(market: string): boolean {
    return this.ids.has(market);
  }

  /** The market is no longer followed. */
  forget(market: string): void {
    this.ids.delete(market);
  }
}
