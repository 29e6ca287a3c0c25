// The coverage summary of one compacted family-day: for every stream and market, the first and newest
// record of the day and what compaction read (the log's bytes and last seq, records quarantined), in
// one small file. A coverage page over a compacted day then reads this file once instead of the
// partitions' manifests (whose record index and part-file lists are most of their bytes) for every
// market: it holds nothing the manifests do not, so a summary that is missing, damaged or stale
// is ignored and the manifests answer as before.
//
// Written by compaction after the day's partitions are published (data first, manifest, then this),
// atomically, and again by every rerun (same content when nothing changed). It is trusted only
// while it is whole (its sha256 covers its body) and every manifest it was made from is the one
// published now (each manifest's mtime, size and inode, as the Parquet store stamps partitions).

import { createHash } from 'node:crypto';
import { statSync } from 'node:fs';
import { mkdir, readFile, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { Family } from '../../schema/observation.js';
import { writeFileDurable } from '../durable.js';
import { MANIFEST, manifestVersion, partitionDir, readManifest } from './manifest.js';
import { datasetsOfStream, type Stream } from './datasets.js';

/** A compacted market-day's ends as its manifest records them (ParquetStore.daySummary). */
export interface DaySummary {
  readonly first: { readonly recv_ts: number; readonly seq: number };
  readonly last: { readonly recv_ts: number; readonly seq: number };
  /** The day's log as compaction read it: its bytes and last seq (-1: not recorded). */
  readonly logBytes: number;
  readonly logLastSeq: number;
  /** Records of the market set aside in quarantine files (not in the record index). */
  readonly quarantined: number;
}

export const COVERAGE_SUMMARY_VERSION = 1;
const STREAMS: readonly Stream[] = ['books', 'metrics', 'catalog'];

/**
 * One market-day of one stream: [first seq, first recv ms, last seq, last recv ms, log bytes, log
 * last seq, quarantined] (the log fields -1 when the manifest has none).
 */
export type SummaryRow = [number, number, number, number, number, number, number];

interface SummaryBody {
  readonly version: number;
  readonly family: Family;
  readonly date: string;
  /**
   * Per stream: its record datasets' manifest stamps (null: no manifest), whether they are a complete
   * version-2 set (otherwise the stream is not summarized) and its markets' rows.
   */
  readonly streams: Record<
    Stream,
    { readonly manifests: Record<string, string | null>; readonly complete: boolean; readonly markets: Record<string, SummaryRow> }
  >;
}

/** Where the summary of a family-day lives (outside `parquet/`, so no engine's glob or listing sees it). */
export const coverageSummaryPath = (dataDir: string, family: Family, day: string): string =>
  join(dataDir, '_coverage', `family=${family}`, `${day}.json`);

/** The summary file's own stamp (mtime, size, inode), '' when there is none. */
export function summaryFileStamp(dataDir: string, family: Family, day: string): string {
  const s = statSync(coverageSummaryPath(dataDir, family, day), { throwIfNoEntry: false });
  return s ? `${s.mtimeMs}:${s.size}:${s.ino}` : '';
}

/** A manifest's stamp: what the Parquet store compares to know a partition was not replaced. */
async function manifestStamp(dir: string): Promise<string | null> {
  try {
    const s = await stat(join(dir, MANIFEST));
    return `${s.mtimeMs}:${s.size}:${s.ino}`;
  } catch {
    return null;
  }
}

const sha256 = (s: string): string => createHash('sha256').update(s).digest('hex');

/**
 * Writes (or rewrites) the summary of a family-day from its published manifests. A stream whose
 * partitions are not all schema version 2 gets no rows (its days are read as before).
 */
export async function writeCoverageSummary(dataDir: string, family: Family, day: string): Promise<boolean> {
  const streams = {} as Record<Stream, SummaryBody['streams'][Stream]>;
  for (const stream of STREAMS) {
    const manifests: Record<string, string | null> = {};
    const markets: Record<string, SummaryRow> = {};
    const found = [];
    for (const dataset of datasetsOfStream(stream)) {
      const dir = partitionDir(dataDir, family, dataset, day);
      // Stamped before it is read: a manifest replaced in between makes the summary stale, never wrong.
      manifests[dataset] = await manifestStamp(dir);
      found.push(manifests[dataset] === null ? null : await readManifest(dir));
    }
    const complete = found.every((m) => m !== null && manifestVersion(m) >= 2);
    if (complete) {
      const m = found[0]!;
      for (const [market, chunks] of Object.entries(m.records ?? {})) {
        if (chunks.length === 0) continue;
        const a = chunks[0];
        const b = chunks[chunks.length - 1];
        const src = m.sources[market];
        const q = found.reduce((n, p) => n + (p!.quarantine?.markets[market] ?? 0), 0);
        markets[market] = [a[0], a[2], b[1], b[3], src?.bytes ?? -1, src?.last_seq ?? -1, q];
      }
    }
    streams[stream] = { manifests, complete, markets };
  }
  if (STREAMS.every((x) => Object.values(streams[x].manifests).every((v) => v === null))) return false; // nothing compacted
  const body = JSON.stringify({ version: COVERAGE_SUMMARY_VERSION, family, date: day, streams } satisfies SummaryBody);
  const path = coverageSummaryPath(dataDir, family, day);
  await mkdir(dirname(path), { recursive: true });
  await writeFileDurable(path, `${sha256(body)}\n${body}\n`);
  return true;
}

/** A trusted summary: per stream, the rows of its markets (absent stream: not summarized). */
export type CoverageSummary = ReadonlyMap<Stream, ReadonlyMap<string, SummaryRow>>;

/** True for a row of seven integers (a damaged but well-formed file could hold anything else). */
const isRow = (r: unknown): r is SummaryRow => Array.isArray(r) && r.length === 7 && r.every((x) => Number.isSafeInteger(x));

/**
 * The summary of a family-day when it is whole and current; null when there is none, it is damaged
 * (checksum, shape) or any manifest it was made from was replaced, added or removed since.
 */
export async function readCoverageSummary(dataDir: string, family: Family, day: string): Promise<CoverageSummary | null> {
  let text: string;
  try {
    text = await readFile(coverageSummaryPath(dataDir, family, day), 'utf8');
  } catch {
    return null;
  }
  const nl = text.indexOf('\n');
  const body = text.slice(nl + 1).replace(/\n$/, '');
  if (nl !== 64 || sha256(body) !== text.slice(0, 64)) return null;
  let s: SummaryBody;
  try {
    s = JSON.parse(body) as SummaryBody;
  } catch {
    return null;
  }
  if (s?.version !== COVERAGE_SUMMARY_VERSION || s.family !== family || s.date !== day || typeof s.streams !== 'object') return null;
  const out = new Map<Stream, Map<string, SummaryRow>>();
  for (const stream of STREAMS) {
    const st = s.streams[stream];
    if (!st || typeof st.manifests !== 'object' || typeof st.markets !== 'object') return null;
    for (const dataset of datasetsOfStream(stream)) {
      const want = st.manifests[dataset];
      if (want === undefined || (await manifestStamp(partitionDir(dataDir, family, dataset, day))) !== want) return null;
    }
    if (st.complete !== true) continue; // not (wholly) compacted in version 2: read as before
    const rows = new Map<string, SummaryRow>();
    for (const [market, row] of Object.entries(st.markets)) {
      if (!isRow(row)) return null;
      rows.set(market, row);
    }
    out.set(stream, rows);
  }
  return out;
}
