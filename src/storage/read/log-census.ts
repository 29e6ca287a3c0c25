// A census of one stream's logs: every market's day files and its newest file's size, mtime and
// inode (its `logStampSync`), taken by compaction and kept in `_coverage/family=F/census-<stream>.json`.
// With the stream's day journal (log/day-journal.ts) it gives a reader every log's stamp without a
// listing or a stat per log: a log named by the journal since the census is stamped for real, every
// other one is as the census saw it, except by appends to its newest file, which only a day file of
// today or yesterday receives (the caller stamps those "live" logs for real; see CoverageCache).
// A census that is missing, damaged (its sha256 covers its body) or whose journal was replaced is
// not used: every log is stamped as before.

import { createHash } from 'node:crypto';
import { mkdir, readFile, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { Family, StreamName } from '../../schema/observation.js';
import { writeFileDurable } from '../durable.js';
import { journalSince, dayJournalPath } from '../log/day-journal.js';
import { decodeMarket, listMarkets } from '../paths.js';
import { logStampSync } from './log-stamp.js';

const VERSION = 1;

/** One log as the census saw it: [day files ascending, newest's size, mtime ms, inode]. */
type CensusRow = [string[], number, number, number];

interface CensusBody {
  readonly version: number;
  readonly family: Family;
  readonly stream: StreamName;
  /** The journal's size before the logs were listed: lines from here on name logs changed since. */
  readonly journal: number;
  readonly logs: Record<string, CensusRow>;
}

/** A log's stamp fields as the census saw it (no `parquet`: the caller's own). */
export interface CensusLog {
  readonly days: readonly string[];
  readonly day: string | null;
  readonly size: number;
  readonly mtimeMs: number;
  readonly ino: number;
}

export const censusPath = (dataDir: string, family: Family, stream: StreamName): string =>
  join(dataDir, '_coverage', `family=${family}`, `census-${stream}.json`);

const sha256 = (s: string): string => createHash('sha256').update(s).digest('hex');

/** Takes the census of (family, stream) now and writes it atomically. */
export async function writeLogCensus(dataDir: string, family: Family, stream: StreamName): Promise<void> {
  // The journal's size first: a log that changes while the folders are listed is named after it.
  const journal = await stat(dayJournalPath(dataDir, family, stream)).then(
    (s) => s.size,
    () => 0,
  );
  const logs: Record<string, CensusRow> = {};
  for (const market of await listMarkets(dataDir, family, stream)) {
    const s = logStampSync(dataDir, { family, stream, market }, '');
    if (Number.isNaN(s.mtimeMs)) continue; // gone while listed: stamped for real by readers
    logs[market] = [[...(s.days ?? [])], s.size, s.mtimeMs, s.ino];
  }
  const body = JSON.stringify({ version: VERSION, family, stream, journal, logs } satisfies CensusBody);
  const path = censusPath(dataDir, family, stream);
  await mkdir(dirname(path), { recursive: true });
  await writeFileDurable(path, `${sha256(body)}\n${body}\n`);
}

const DAY = /^\d{4}-\d{2}-\d{2}$/;
const isRow = (r: unknown): r is CensusRow =>
  Array.isArray(r) &&
  r.length === 4 &&
  Array.isArray(r[0]) &&
  (r[0] as unknown[]).every((d) => typeof d === 'string' && DAY.test(d)) &&
  r.slice(1).every((x) => typeof x === 'number' && !Number.isNaN(x));

/** Parsed censuses, kept while their file's stamp holds (one stat a look). */
const parsed = new Map<string, { stamp: string; body: CensusBody | null }>();

async function load(path: string, family: Family, stream: StreamName): Promise<CensusBody | null> {
  const st = await stat(path).catch(() => null);
  if (!st) return null;
  const stamp = `${st.mtimeMs}:${st.size}:${st.ino}`;
  const hit = parsed.get(path);
  if (hit?.stamp === stamp) return hit.body;
  let body: CensusBody | null = null;
  try {
    const text = await readFile(path, 'utf8');
    const nl = text.indexOf('\n');
    const raw = text.slice(nl + 1).replace(/\n$/, '');
    if (nl === 64 && sha256(raw) === text.slice(0, 64)) {
      const b = JSON.parse(raw) as CensusBody;
      const ok =
        b?.version === VERSION &&
        b.family === family &&
        b.stream === stream &&
        Number.isSafeInteger(b.journal) &&
        typeof b.logs === 'object' &&
        b.logs !== null &&
        Object.values(b.logs).every(isRow);
      if (ok) body = b;
    }
  } catch {
    body = null;
  }
  parsed.set(path, { stamp, body });
  return body;
}

/**
 * The logs of (family, stream) whose stamp the census still knows: every log of the census not
 * named by the journal since. Null without a usable census (stamp every log).
 */
export async function logCensus(dataDir: string, family: Family, stream: StreamName): Promise<ReadonlyMap<string, CensusLog> | null> {
  const body = await load(censusPath(dataDir, family, stream), family, stream);
  if (!body) return null;
  const since = await journalSince(dataDir, family, stream, body.journal);
  if (!since) return null;
  const changed = new Set<string>();
  for (const folder of since.folders) {
    const m = decodeMarket(folder);
    if (m !== null) changed.add(m);
  }
  const out = new Map<string, CensusLog>();
  for (const [market, [days, size, mtimeMs, ino]] of Object.entries(body.logs)) {
    if (changed.has(market)) continue;
    out.set(market, { days, day: days.length > 0 ? days[days.length - 1] : null, size, mtimeMs, ino });
  }
  return out;
}
