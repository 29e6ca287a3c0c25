// Warming the Parquet read path before a server says `ready`. In a fresh process the first read of
// a compacted day paid for loading apache-arrow and the parquet-wasm module (150 – 200 ms on the
// development VM), for compiling each WebAssembly function on its first call, and for running the
// decode in the engines' slowest tiers: 0.5 – 0.9 s for a one-hour range that costs about 0.1 s
// once that code has run once. `warmParquet` pays this at start instead: it loads the modules, then
// decodes one record chunk of the newest compacted books partition through a private store that is
// closed at once. Nothing it decoded or read stays in the process (closing a file drops its blocks, see
// file-ranges.ts), so the first request still reads its own files, footers and row groups cold.

import { stat } from 'node:fs/promises';
import type { Family } from '../../schema/observation.js';
import { listPartitions, parquetRoot, readManifest } from './manifest.js';
import { ParquetStore } from './reader.js';

export interface ParquetWarmUp {
  /** The Parquet modules were loaded (the data dir has a Parquet tree). */
  readonly loaded: boolean;
  /** The chunk decoded, or null when no compacted books partition lists a market. */
  readonly decoded: { readonly family: Family; readonly date: string; readonly market: string; /** Receive time (ms) the chunk starts at. */ readonly from: number } | null;
}

/** Loads the Parquet modules and runs one real decode, when the data dir holds compacted days. */
export async function warmParquet(dataDir: string): Promise<ParquetWarmUp> {
  if (!(await stat(parquetRoot(dataDir)).then(() => true, () => false))) return { loaded: false, decoded: null };
  await import('./file.js');
  const parts = await listPartitions(dataDir, { dataset: 'book_changes' });
  // Newest first: the day a server is most likely to be asked about, and the current schema.
  parts.sort((a, b) => (a.date < b.date ? 1 : a.date > b.date ? -1 : 0));
  for (const p of parts) {
    const markets = Object.keys((await readManifest(p.dir))?.records ?? {});
    if (markets.length === 0) continue;
    const store = new ParquetStore(dataDir);
    try {
      const day = await store.marketDay(p.family, 'books', p.date, markets[0]);
      if (day === null || day.segments.length === 0) continue;
      await day.group(day.segments[0]);
      return { loaded: true, decoded: { family: p.family, date: p.date, market: markets[0], from: day.segments[0].minRecv } };
    } finally {
      store.close();
    }
  }
  return { loaded: true, decoded: null };
}
