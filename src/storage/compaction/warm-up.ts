// Warming the Parquet read path before a server says `ready`. In a fresh process the first read of
// a compacted day paid for loading apache-arrow and the parquet-wasm module, for compiling each
// WebAssembly function on its first call, and for running the decode in the engines' slowest tiers:
// several times what the same range costs once that code has run once (`npm run bench -- parquet`,
// cold and warm). `warmParquet` pays this at start instead: it loads the modules, then
// decodes one record chunk of the newest compacted books partition through a private store that is
// closed at once. Nothing it decoded or read stays in the process (closing a file drops its blocks, see
// file-ranges.ts), so the first request still reads its own files, footers and row groups cold.

import { stat } from 'node:fs/promises';
import type { Family } from '../../schema/observation.js';
import { listPartitions, parquetRoot, readManifest } from '../parquet/manifest.js';
import { ParquetStore } from '../parquet/reader.js';

export interface ParquetWarmUp {
  /** The Parquet modules were loaded (the data dir has a Parquet tree). */
  readonly loaded: boolean;
  /** The chunk decoded, or null when no compacted books partition lists a market. */
  readonly decoded: {
    readonly family: Family;
    readonly date: string;
    readonly market: string;
    /** Receive time (ms) the chunk starts at. */ readonly from: number;
  } | null;
}

/** Loads the Parquet modules and runs one real decode, when the data dir holds compacted days. */
export async function warmParquet(dataDir: string): Promise<ParquetWarmUp> {
  if (
    !(await stat(parquetRoot(dataDir)).then(
      () => true,
      () => false,
    ))
  )
    return { loaded: false, decoded: null };
  await import('../parquet/file.js');
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

/**
 * Runs `GET /v3/datasets/rows`'s read (dataset-rows.ts) on the hour of book changes from `at.from`,
 * up to `rounds` times or until `budgetMs` have passed, each round through a private store closed at
 * once (nothing decoded stays). The decoder's WebAssembly starts in its baseline tier and is
 * recompiled where it runs hot, so a request served by cold code takes several times a warm one.
 */
export async function warmDatasetRows(
  dataDir: string,
  at: { readonly family: Family; readonly market: string; readonly from: number },
  opts: { readonly rounds?: number; readonly budgetMs?: number } = {},
): Promise<{ readonly rounds: number; readonly bytes: number; readonly ms: number }> {
  const t0 = performance.now();
  const rounds = opts.rounds ?? 20;
  const budgetMs = opts.budgetMs ?? 1000;
  const { datasetRowsIPC } = await import('./dataset-rows.js');
  let done = 0;
  let bytes = 0;
  while (done < rounds && performance.now() - t0 < budgetMs) {
    const store = new ParquetStore(dataDir);
    try {
      bytes = 0;
      const start = Math.floor(at.from);
      for await (const p of datasetRowsIPC(dataDir, store, {
        family: at.family,
        dataset: 'book_changes',
        market: at.market,
        start,
        end: start + 3_600_000,
      }))
        bytes += p.byteLength;
    } finally {
      store.close();
    }
    done++;
  }
  return { rounds: done, bytes, ms: Math.round(performance.now() - t0) };
}
