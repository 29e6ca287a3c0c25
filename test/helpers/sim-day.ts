// A compacted `pmtape sim` day for the engine and Tardis-client tests: the real emulators and the real recorder run
// with their clocks moved back to yesterday noon (shift-clock.ts), until one coin book has enough
// batches; the day is then compacted, exported as Tardis files by `pmtape export tardis`, and a real
// `pmtape serve` (today's clock) answers the API's as_of books over the same data dir.

import { gunzipSync } from 'node:zlib';
import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { compactDay } from '../../src/storage/index.js';
import { createKey } from '../../src/api/plugins/keys.js';
import { DAY_MS, utcDay } from '../../src/schema/time.js';
import { getJson, runCli, runCliOnce, tempDir, waitFor } from '../selfhost/helpers.js';

const SHIFT_JS = join(dirname(fileURLToPath(import.meta.url)), 'shift-clock.js');

interface TapLike {
  teardown(fn: () => unknown): void;
}

export interface SimDay {
  readonly dataDir: string;
  readonly day: string;
  /** The folder `pmtape export tardis` wrote. */
  readonly out: string;
  /** The serve process's base URL and a paid key. */
  readonly base: string;
  readonly key: string;
}

export interface SimMarket {
  readonly market_id: string;
  readonly coin: string;
  readonly question: string;
  readonly outcomes: { label: string; token_id: string }[];
  readonly native: Record<string, unknown>;
}

/** One exported book: its file, market and outcome label (as the catalogue spells it). */
export interface SimBook {
  readonly file: string;
  readonly market: SimMarket;
  readonly outcome: string;
}

/** Records, compacts and exports a sim day; `minSeq` is the book seq one coin market must reach. */
export async function recordSimDay(t: TapLike, minSeq: number): Promise<SimDay> {
  const dir = tempDir(t, 'pmtape-engines-');
  const dataDir = join(dir, 'data');
  const cfg = join(dir, 'sim-config.json');
  // The shifted clock starts at yesterday 12:00 UTC: the run stays inside that closed day.
  const shift = (Date.now() % DAY_MS) + DAY_MS / 2;
  const day = utcDay(Date.now() - shift);
  const env = { PMTAPE_TEST_CLOCK_SHIFT_MS: String(shift), NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --import ${SHIFT_JS}` };
  const sim = runCli(t, ['sim', '--port', '0', '--seed', '7', '--window-scale', '0.2', '--rate', '300', '--config-out', cfg], { env });
  await sim.ready;
  const rec = runCli(t, ['record', '--config', cfg, '--data-dir', dataDir], { env, readyTimeoutMs: 60_000 });
  await rec.ready;
  const key = (await createKey(dataDir, 'paid', 'engines')).key;
  const serve = runCli(t, ['serve', '--port', '0', '--data-dir', dataDir], { readyTimeoutMs: 60_000 });
  const base = await serve.ready;

  type Cov = { family: string; market_id: string; datasets: { books?: { last_seq: number } } };
  const best = async (): Promise<Cov | undefined> => {
    const r = await getJson(`${base}/v3/coverage?family=coin&limit=1000`, key);
    const cov = r.status === 200 ? ((r.body as { data: Cov[] }).data ?? []) : [];
    return cov
      .filter((c) => (c.datasets.books?.last_seq ?? 0) >= minSeq)
      .sort((a, b) => b.datasets.books!.last_seq - a.datasets.books!.last_seq)[0];
  };
  // Bounded generously: the emulators publish hundreds of changes a second even on a busy machine.
  const hit = await waitFor(best, 600_000, 1000);
  if (!hit) throw new Error(`no coin market reached book seq ${minSeq} within 10 minutes\nrecord stderr:\n${rec.stderr.slice(-2000)}`);
  await rec.stop();
  await sim.stop();

  const results = await compactDay(dataDir, day);
  const failed = results.filter((r) => r.status === 'failed');
  if (failed.length) throw new Error(`compaction failed: ${JSON.stringify(failed)}`);
  const out = join(dir, 'tardis');
  const exp = await runCliOnce(['export', 'tardis', '--date', day, '--out', out, '--data-dir', dataDir, '--exchange', 'pmtape-clob'], {
    timeoutMs: 300_000,
  });
  if (exp.code !== 0) throw new Error(`pmtape export tardis exited ${exp.code}: ${exp.stderr}`);

  return { dataDir, day, out, base, key };
}

/** The catalogue's record of a coin market (found under its coin) through the API. */
export async function marketInfo(sd: SimDay, marketId: string): Promise<SimMarket> {
  for (const coin of ['btc', 'eth', 'bnb', 'sol']) {
    const list = await getJson(`${sd.base}/v3/${coin}/markets?limit=1000`, sd.key);
    if (list.status !== 200) continue;
    const m = (list.body as { data: Omit<SimMarket, 'coin'>[] }).data.find((x) => x.market_id === marketId);
    if (m) return { ...m, coin };
  }
  throw new Error(`market ${marketId} is under no coin`);
}

/** How many batches of a book file move its best bid or best ask (Tardis rule, rebuilt here). */
function topMoves(rows: string[][]): number {
  const bids = new Map<string, number>();
  const asks = new Map<string, number>();
  let moves = 0;
  let top = '';
  let prevSnap = false;
  for (let i = 0; i < rows.length; i++) {
    const [, , , local, snap, side, price, amount] = rows[i];
    if (snap === 'true' && !prevSnap) {
      bids.clear();
      asks.clear();
    }
    prevSnap = snap === 'true';
    const book = side === 'bid' ? bids : asks;
    if (Number(amount) === 0) book.delete(price);
    else book.set(price, Number(price));
    if (i + 1 < rows.length && rows[i + 1][3] === local) continue;
    const now = `${Math.max(...bids.values())}/${Math.min(...asks.values())}`;
    if (now !== top) moves++;
    top = now;
  }
  return moves;
}

/**
 * The exported coin book whose best prices move most often, among those with `minInstants` quiet
 * instants: a market maker only fills where the market comes to its quotes.
 */
export async function liveliestBook(sd: SimDay, minInstants: number): Promise<SimBook> {
  const prefix = `pmtape-clob_incremental_book_L2_${sd.day}_`;
  let best: { file: string; symbol: string; moves: number } | null = null;
  for (const name of readdirSync(sd.out).filter((f) => f.startsWith(prefix))) {
    const file = join(sd.out, name);
    if (quietTimes(file).length < minInstants) continue;
    const moves = topMoves(csvRows(file).slice(1));
    if (!best || moves > best.moves) best = { file, symbol: name.slice(prefix.length, -'.csv.gz'.length), moves };
  }
  if (!best) throw new Error(`no exported coin book has ${minInstants} quiet instants`);
  const cut = best.symbol.lastIndexOf('-');
  const market = await marketInfo(sd, best.symbol.slice(0, cut).toLowerCase());
  const outcome = market.outcomes.find((o) => o.label.toUpperCase() === best.symbol.slice(cut + 1))?.label;
  if (!outcome) throw new Error(`${best.symbol}: no outcome of market ${market.market_id} is named so`);
  return { file: best.file, market, outcome };
}

/** One Tardis CSV.gz file as rows of cells (header first). */
export function csvRows(file: string): string[][] {
  return gunzipSync(readFileSync(file))
    .toString('utf8')
    .split('\n')
    .filter((l) => l.length > 0)
    .map((l) => l.split(','));
}

/** The export's file of `dataType` for a market's outcome (symbols are `<MARKET>-<OUTCOME>` in capitals). */
export function tardisFile(sd: SimDay, dataType: string, book: SimBook): string {
  const name = `pmtape-clob_${dataType}_${sd.day}_${book.market.market_id.toUpperCase()}-${book.outcome.toUpperCase()}.csv.gz`;
  if (!readdirSync(sd.out).includes(name))
    throw new Error(`${name} not in the export (${readdirSync(sd.out).slice(0, 5).join(', ')}, ...)`);
  return join(sd.out, name);
}

/**
 * `n` instants (µs, whole ms) spread over the book file's day, each in the middle of a quiet stretch
 * (no batch within 2 ms either side), so "the book at T" means the same whether a reader counts a
 * batch at exactly T in or out.
 */
export function quietInstants(bookFile: string, n: number): number[] {
  const quiet = quietTimes(bookFile);
  if (quiet.length < n) throw new Error(`only ${quiet.length} quiet instants in ${bookFile}, ${n} wanted`);
  return Array.from({ length: n }, (_, k) => quiet[Math.floor((k * (quiet.length - 1)) / Math.max(1, n - 1))]);
}

function quietTimes(bookFile: string): number[] {
  const ts = [
    ...new Set(
      csvRows(bookFile)
        .slice(1)
        .map((r) => Number(r[3])),
    ),
  ].sort((a, b) => a - b);
  const quiet: number[] = [];
  for (let i = 1; i < ts.length; i++) {
    const mid = Math.floor((ts[i - 1] + ts[i]) / 2000) * 1000;
    if (mid - ts[i - 1] > 2000 && ts[i] - mid > 2000) quiet.push(mid);
  }
  return quiet;
}

/** A decimal's canonical text (`0.40` and `0.4` and the JSON number 0.4 read the same). */
export function dec(v: string | number): string {
  const s = typeof v === 'number' ? String(v) : v;
  return s.includes('.') ? s.replace(/0+$/, '').replace(/\.$/, '') : s;
}

export type Levels = [string, string][];

/** The API's book of `outcome` as of `tUs` (µs): the coin snapshots route's "book as of T". */
export async function apiBook(sd: SimDay, bk: SimBook, tUs: number): Promise<{ bids: Levels; asks: Levels }> {
  const end = new Date(tUs / 1000).toISOString();
  const url = `${sd.base}/v3/${bk.market.coin}/markets/${bk.market.market_id}/snapshots?include_orderbook=true&end_time=${end}&order=desc&limit=1`;
  const r = await getJson(url, sd.key);
  if (r.status !== 200) throw new Error(`${url}: ${r.status} ${JSON.stringify(r.body)}`);
  const snap = (r.body as { data: { books: { outcome: string; bids: [number, number][]; asks: [number, number][] }[] }[] }).data[0];
  const book = snap?.books.find((b) => b.outcome === bk.outcome);
  const side = (l: [number, number][] | undefined): Levels => (l ?? []).map(([p, s]) => [dec(p), dec(s)]);
  return { bids: side(book?.bids), asks: side(book?.asks) };
}

/** An engine's levels in canonical decimal text. */
export const canon = (l: Levels): Levels => l.map(([p, s]) => [dec(p), dec(s)]);
