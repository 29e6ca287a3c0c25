// The importer contract (`pmtape import --kind K`): an importer maps one captured message through
// its kind's own normalizer to keyed observations; the generic driver (import-run.ts) does time,
// de-duplication, ordering and appends. Each family descriptor (src/families/) lists its importers.

import { listMarkets, openReader } from '../storage/index.js';
import type { LogKey } from '../storage/index.js';
import type { Market } from '../schema/market.js';
import type { Family, Observation } from '../schema/observation.js';
import type { CapturedMessage } from './capture.js';

export interface ImportTarget {
  readonly key: LogKey;
  readonly obs: Observation;
  /** Mark as a full-book checkpoint in the sparse index (every yes/no and wallet book is complete). */
  readonly checkpoint?: boolean;
}

export interface ImportSession {
  /** One captured message received at `recvTs` → keyed observations, or the reason for none. */
  map(m: CapturedMessage, recvTs: number): Promise<{ out: ImportTarget[]; skip?: string }>;
}

export interface Importer {
  readonly kind: string;
  /** Prepares a session over the data dir (e.g. loads identifier maps from recorded catalogues). */
  open(dataDir: string): Promise<ImportSession>;
}

/** Latest catalogue state of every recorded market of `family`, by market id (the ticker for yes/no). */
export async function recordedMarkets<F extends Family>(dataDir: string, family: F): Promise<Map<string, Extract<Market, { family: F }>>> {
  const out = new Map<string, Extract<Market, { family: F }>>();
  for (const id of await listMarkets(dataDir, family, 'catalog')) {
    const last = await openReader(dataDir, { family, stream: 'catalog', market: id })
      .latest()
      .catch(() => null);
    if (last?.rec.type === 'catalog' && last.rec.market.family === family) out.set(id, last.rec.market as Extract<Market, { family: F }>);
  }
  return out;
}
