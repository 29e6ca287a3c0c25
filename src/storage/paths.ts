// Where logs live on disk: `<dataDir>/logs/<family>/<stream>/<market>/<YYYY-MM-DD>.log` plus an
// `.idx` sidecar and one `.lock` per market folder. Market ids are arbitrary text, so they are
// encoded into one safe path segment (never `.`/`..`, no separators) and decoded for listing.

import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { FAMILIES, STREAMS, type Family, type StreamName } from '../schema/observation.js';
import { DAY_MS, dayStartMs } from '../schema/time.js';
import type { LogKey } from './types.js';

const SAFE = /[A-Za-z0-9_-]/;

/**
 * Market id → one path segment: [A-Za-z0-9_-] kept, '.' kept except at the start (so no `.`, `..`
 * or hidden names), every other UTF-8 byte written as %XX. Reversible and injective.
 */
export function encodeMarket(market: string): string {
  if (typeof market !== 'string' || market.length === 0) throw new RangeError('market id must be non-empty text');
  // A lone surrogate has no UTF-8 form: two such ids would share one folder.
  if (/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(market)) {
    throw new RangeError('market id is not well-formed Unicode');
  }
  let out = '';
  const bytes = Buffer.from(market, 'utf8');
  for (let i = 0; i < bytes.length; i++) {
    const ch = String.fromCharCode(bytes[i]);
    if (bytes[i] < 0x80 && (SAFE.test(ch) || (ch === '.' && i > 0))) out += ch;
    else out += '%' + bytes[i].toString(16).toUpperCase().padStart(2, '0');
  }
  return out;
}

/** Inverse of encodeMarket; null for a name encodeMarket would never produce. */
export function decodeMarket(segment: string): string | null {
  if (segment.length === 0 || segment.startsWith('.')) return null;
  if (!/^(?:[A-Za-z0-9._-]|%[0-9A-F]{2})+$/.test(segment)) return null;
  const bytes: number[] = [];
  for (let i = 0; i < segment.length; i++) {
    if (segment[i] === '%') {
      bytes.push(parseInt(segment.slice(i + 1, i + 3), 16));
      i += 2;
    } else bytes.push(segment.charCodeAt(i));
  }
  const text = Buffer.from(bytes).toString('utf8');
  return encodeMarket(text) === segment ? text : null;
}

export const logsRoot = (dataDir: string): string => join(dataDir, 'logs');

export const streamDir = (dataDir: string, family: Family, stream: StreamName): string => join(dataDir, 'logs', family, stream);

export const marketDir = (dataDir: string, key: LogKey): string => join(dataDir, 'logs', key.family, key.stream, encodeMarket(key.market));

export const logFilePath = (dataDir: string, key: LogKey, day: string): string => join(marketDir(dataDir, key), `${day}.log`);

export const indexFilePath = (dataDir: string, key: LogKey, day: string): string => join(marketDir(dataDir, key), `${day}.idx`);

export const lockFilePath = (dataDir: string, key: LogKey): string => join(marketDir(dataDir, key), '.lock');

/** The `.idx` sidecar of a `.log` path. */
export const indexPathOf = (logPath: string): string => logPath.replace(/\.log$/, '.idx');

const DAY_FILE = /^(\d{4}-\d{2}-\d{2})\.log$/;

async function readdirOrEmpty(dir: string): Promise<string[]> {
  try {
    return await readdir(dir);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT' || (e as NodeJS.ErrnoException).code === 'ENOTDIR') return [];
    throw e;
  }
}

/** Decoded market ids that have a log folder for (family, stream), sorted. */
export async function listMarkets(dataDir: string, family: Family, stream: StreamName): Promise<string[]> {
  const out: string[] = [];
  for (const name of await readdirOrEmpty(streamDir(dataDir, family, stream))) {
    const m = decodeMarket(name);
    if (m !== null) out.push(m);
  }
  return out.sort();
}

/** UTC days (`YYYY-MM-DD`) that have a log file for this key, ascending. */
export async function listDays(dataDir: string, key: LogKey): Promise<string[]> {
  const out: string[] = [];
  let dir: string;
  try {
    dir = marketDir(dataDir, key);
  } catch {
    return out; // a market id that cannot name a folder has no logs
  }
  for (const name of await readdirOrEmpty(dir)) {
    const m = DAY_FILE.exec(name);
    if (m && dayStartMs(m[1]) !== null) out.push(m[1]);
  }
  return out.sort();
}

/** Every log key that has a folder under the data dir (for verify and compaction). */
export async function listKeys(dataDir: string): Promise<LogKey[]> {
  const keys: LogKey[] = [];
  for (const family of FAMILIES) {
    for (const stream of STREAMS) {
      for (const market of await listMarkets(dataDir, family, stream)) keys.push({ family, stream, market });
    }
  }
  return keys;
}

/**
 * True once no record can still be appended to `day`: its UTC midnight has passed (the writer
 * refuses recv times that go backwards, so a later day file means this one is final too).
 */
export function isDayClosed(day: string, nowMs: number): boolean {
  const start = dayStartMs(day);
  if (start === null) throw new RangeError(`not a day: ${day}`);
  return nowMs >= start + DAY_MS;
}
