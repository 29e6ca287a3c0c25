// The Tardis-format files of a compacted day: which markets and symbols it has, and one symbol's
// file as a gzip stream (no temporary file: rows.ts's text goes straight through zlib). A symbol is
// `<MARKET>-<OUTCOME>` in capitals (docs/tardis.md): the tardis-dev clients capitalize the symbols
// they are given, so a symbol is matched without regard to case.

import { Readable } from 'node:stream';
import { LRUCache } from 'lru-cache';
import { constants } from 'node:zlib';
import type { Family } from '../../schema/observation.js';
import { partitionDir, readManifest } from '../parquet/manifest.js';
import { parquetStore, type ParquetStore } from '../parquet/reader.js';
import { booksOf } from '../parquet/datasets.js';
import { chunks } from './columns.js';
import { readSegment } from './decoders.js';
import { parallelGzip } from './parallel-gzip.js';
import { tardisBody, tardisHeader, type TardisDecode, type TardisRequest, type TardisView } from './rows.js';

export interface TardisSymbol {
  readonly symbol: string;
  readonly market: string;
  readonly view: TardisView;
  /** The outcome label the symbol names (null when the catalogue gave none: the token id is used). */
  readonly outcome: string | null;
}

/** A name made safe for a symbol (and a file name): capitals, digits, `.`, `_` and `-` only. */
export const symbolPart = (s: string): string => s.toUpperCase().replace(/[^A-Z0-9._-]/g, '_');
const outcomePart = (s: string): string => s.toUpperCase().replace(/[^A-Z0-9._]/g, '_');

/** The markets of a compacted day of a family, or null when the day has no published `book_changes` partition. */
export async function tardisMarkets(dataDir: string, family: Family, day: string): Promise<string[] | null> {
  const m = await readManifest(partitionDir(dataDir, family, 'book_changes', day));
  if (!m) return null;
  const markets = new Set(Object.keys(m.sources));
  const t = await readManifest(partitionDir(dataDir, family, 'trades', day));
  for (const k of Object.keys(t?.sources ?? {})) markets.add(k);
  return [...markets].sort();
}

/**
 * The symbols of one market's day: a yes/no market has two views of its one book (`-YES`, `-NO`),
 * a decimal-book market one symbol per outcome token its rows hold, in order of first appearance.
 */
export async function tardisSymbols(
  dataDir: string,
  family: Family,
  day: string,
  market: string,
  store: ParquetStore = parquetStore(dataDir),
): Promise<TardisSymbol[]> {
  const m = symbolPart(market);
  if (booksOf(family) === 'yesno') {
    return (['yes', 'no'] as const).map((s) => ({ symbol: `${m}-${s.toUpperCase()}`, market, view: { yesno: s }, outcome: s }));
  }
  // Finding the tokens reads two columns of the market's whole day: kept per partition publication
  // (a recompaction writes a new manifest, so its `created` names the files the answer came from).
  const stamps = await Promise.all(
    (['book_changes', 'trades'] as const).map(async (d) => (await readManifest(partitionDir(dataDir, family, d, day)))?.created ?? ''),
  );
  const key = `${dataDir}\0${family}\0${day}\0${market}\0${stamps.join('|')}`;
  const hit = symbolCache.get(key);
  if (hit) return hit;
  const found = await tokenSymbols(store, family, day, market, m);
  symbolCache.set(key, found);
  return found;
}

const symbolCache = new LRUCache<string, TardisSymbol[]>({ max: 4096 });

async function tokenSymbols(store: ParquetStore, family: Family, day: string, market: string, m: string): Promise<TardisSymbol[]> {
  const tokens = new Map<string, string | null>();
  for (const dataset of ['book_changes', 'trades'] as const) {
    const files = await store.datasetFiles(family, dataset, day, market);
    if (!files) continue;
    for (const s of files.segments) {
      const seg = await readSegment(files.files.get(s.file)!, s, ['token_id', 'outcome'], 'worker');
      try {
        for (const { n, c } of chunks(seg.table, ['token_id', 'outcome'])) {
          for (let i = 0; i < n; i++) {
            const tok = c.token_id.text(i);
            if (tok !== null && (!tokens.has(tok) || (tokens.get(tok) === null && !c.outcome.isNull(i))))
              tokens.set(tok, c.outcome.text(i));
          }
        }
      } finally {
        seg.release();
      }
    }
  }
  const named = [...tokens].map(([token, label]) => ({ token, label, part: outcomePart(label ?? token) }));
  return named.map(({ token, label, part }) => {
    // Two labels that read the same once made safe: those symbols name their token instead.
    const clash = named.filter((x) => x.part === part).length > 1;
    return { symbol: `${m}-${clash ? outcomePart(token) : part}`, market, view: { token }, outcome: label };
  });
}

/** The symbol `symbol` names on a compacted day (any case), or null. */
export async function findTardisSymbol(
  dataDir: string,
  family: Family,
  day: string,
  symbol: string,
  markets: readonly string[],
): Promise<TardisSymbol | null> {
  const want = symbol.toUpperCase();
  for (const market of markets) {
    if (!want.startsWith(`${symbolPart(market)}-`)) continue;
    const hit = (await tardisSymbols(dataDir, family, day, market)).find((s) => s.symbol === want);
    if (hit) return hit;
  }
  return null;
}

/**
 * gzip level of the files: 1 (zlib's fastest). At 6, zlib's default, compressing took about 60 % of
 * the route's CPU (the CSV is highly repetitive); level 1 makes files about 12 % larger and takes a
 * third of the time (figures in docs/tardis.md). Readers decompress either the same way.
 */
export const TARDIS_GZIP_LEVEL = constants.Z_BEST_SPEED;

/**
 * One symbol's file of one day: its CSV (header, then rows) gzip-compressed as it is read, on the
 * thread pool, several blocks at once (parallel-gzip.ts): one member, as any gzip reader expects. A
 * row group that cannot be decoded destroys the stream with the error (the route aborts its response).
 */
export function tardisFile(
  dataDir: string,
  req: TardisRequest,
  store: ParquetStore = parquetStore(dataDir),
  decode: TardisDecode = 'worker',
): Readable {
  const header = Buffer.from(tardisHeader(req.dataType), 'utf8');
  let consumed = 0;
  async function* text(): AsyncGenerator<Buffer> {
    yield header;
    // The body's buffers are reused once the compressor has copied them (its count, less the header).
    yield* tardisBody(store, req, decode, () => consumed - header.length);
  }
  return Readable.from(
    parallelGzip(text(), TARDIS_GZIP_LEVEL, (n) => (consumed += n)),
    { objectMode: false, highWaterMark: 1 << 20 },
  );
}
