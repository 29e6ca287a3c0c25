// A compacted day for the Tardis-format tests (seedAll's coin, wallet and yes/no markets on 2026-07-26,
// logs deleted so only the Parquet serves it), a small Tardis-rule book rebuild, and the API's
// `as_of` books in the same form, so a file's books can be compared with what pmtape serves.

import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { FastifyInstance } from 'fastify';
import { compactDay, deleteExpiredLogs } from '../../src/storage/testing.js';
import { keysFor, seedAll } from '../api/helpers.js';

export const DAY = '2026-07-26';
export const CLI = fileURLToPath(new URL('../../cli.js', import.meta.url));
export const run = promisify(execFile);

export async function compactedDay(dir: string): Promise<{ free: string; paid: string }> {
  await seedAll(dir);
  await compactDay(dir, DAY);
  await deleteExpiredLogs(dir, Date.now(), 0);
  return keysFor(dir);
}

/** Levels best first as numbers, as the API serves them. */
export type Book = { bids: [number, number][]; asks: [number, number][] };

export interface CsvFile {
  readonly header: string;
  readonly rows: string[][];
}

export function parseCsv(text: string): CsvFile {
  const lines = text.split('\n');
  if (lines.at(-1) === '') lines.pop();
  return { header: lines[0], rows: lines.slice(1).map((l) => l.split(',')) };
}

/**
 * An `incremental_book_L2` file's book as it stood after every row with local_timestamp ≤ `untilUs`,
 * by the rule Tardis documents: a book is reset where `is_snapshot` turns from false to true, and
 * amount 0 removes a level.
 */
export function rebuild(f: CsvFile, untilUs: number): Book {
  const bids = new Map<string, string>();
  const asks = new Map<string, string>();
  let prevSnap = false;
  for (const r of f.rows) {
    if (Number(r[3]) > untilUs) break;
    const snap = r[4] === 'true';
    if (snap && !prevSnap) {
      bids.clear();
      asks.clear();
    }
    prevSnap = snap;
    const side = r[5] === 'bid' ? bids : asks;
    if (Number(r[7]) === 0) side.delete(r[6]);
    else side.set(r[6], r[7]);
  }
  const levels = (m: Map<string, string>, dir: 1 | -1): [number, number][] =>
    [...m].map(([p, s]): [number, number] => [Number(p), Number(s)]).sort((a, b) => dir * (a[0] - b[0]));
  return { bids: levels(bids, -1), asks: levels(asks, 1) };
}

const round6 = (x: number): number => Math.round(x * 1e6) / 1e6;

/**
 * The API's books at receive time T (ms) by Tardis symbol: each coin outcome token's, the wallet's
 * stored outcome, and a yes/no market's YES and NO views. Null while the API calls the book stale.
 */
export async function asOfBooks(app: FastifyInstance, key: string, T: number): Promise<Map<string, Book> | null> {
  const get = async (url: string): Promise<any> => {
    const r = await app.inject({ url, headers: { authorization: `Bearer ${key}` } });
    if (r.statusCode !== 200) throw new Error(`${url}: ${r.statusCode} ${r.body}`);
    return r.json();
  };
  const out = new Map<string, Book>();
  const iso = new Date(T).toISOString();
  const coin = (await get(`/v3/btc/markets/540817/orderbook/latest?as_of=${iso}`)).data;
  if (coin.stale) return null;
  for (const b of coin.books) out.set(`540817-${b.token_id === '1111' ? 'UP' : 'DOWN'}`, { bids: b.bids, asks: b.asks });
  const w = (await get(`/v3/wallet-prediction/w-9001/orderbook/latest?as_of=${iso}`)).data;
  out.set('W-9001-UP', { bids: w.bids, asks: w.asks });
  const yn = (await get(`/v3/yesno-exchange/KXBTC15M-26JUL261215-15/orderbook/latest?as_of=${iso}`)).data;
  const lad = (l: { prices: string[]; sizes: string[] }, mirror: boolean): [number, number][] =>
    l.prices.map((p, i): [number, number] => [mirror ? round6(1 - Number(p)) : Number(p), Number(l.sizes[i])]);
  const sort = (b: Book): Book => ({ bids: b.bids.sort((x, y) => y[0] - x[0]), asks: b.asks.sort((x, y) => x[0] - y[0]) });
  out.set('KXBTC15M-26JUL261215-15-YES', sort({ bids: lad(yn.yes, false), asks: lad(yn.no, true) }));
  out.set('KXBTC15M-26JUL261215-15-NO', sort({ bids: lad(yn.no, false), asks: lad(yn.yes, true) }));
  return out;
}

/** Instants (ms) spread over the seeded records (coin: 100 s with a gap at 40-50 s; yes/no 60 s; wallet 60 s). */
export const INSTANTS = [1_000, 7_300, 19_990, 33_333, 39_999, 52_100, 58_750, 71_000, 99_999].map(
  (d) => Date.parse(`${DAY}T12:00:00Z`) + d,
);

export const readGz = (path: string, gunzip: (b: Buffer) => Buffer): string => gunzip(readFileSync(path)).toString('utf8');
export const fileIn = (dir: string, exchange: string, type: string, symbol: string): string =>
  join(dir, `${exchange}_${type}_${DAY}_${symbol}.csv.gz`);
