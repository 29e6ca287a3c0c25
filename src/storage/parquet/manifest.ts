// Where Parquet partitions live and what their manifests say. A partition is
// `parquet/family=F/dataset=D/date=YYYY-MM-DD/` holding `<dataset>-<date>[-NNNN].parquet` part files
// and a `_manifest.json` (leading `_`: query engines skip it); see publish.ts for how it appears.

import { readFile, readdir, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { FAMILIES, type Family } from '../../schema/observation.js';
import { dayStartMs } from '../../schema/time.js';
import { DATASET_FOLDERS, type AnyDataset } from './datasets.js';
import { isDurableTemp, writeFileDurable } from '../durable.js';

export const parquetRoot = (dataDir: string): string => join(dataDir, 'parquet');
/** Where partitions are built before they are renamed into `parquet/` (and the compactor's lock). */
export const stagingRoot = (dataDir: string): string => join(dataDir, '_parquet-staging');

export const partitionRel = (family: Family, dataset: AnyDataset, date: string): string =>
  `family=${family}/dataset=${dataset}/date=${date}`;

export const partitionDir = (dataDir: string, family: Family, dataset: AnyDataset, date: string): string =>
  join(parquetRoot(dataDir), partitionRel(family, dataset, date));

/**
 * The name a staging file inside a partition folder would have (earlier layouts; a stray one is
 * removed by the next run): the leading `_` makes Spark/pyarrow/polars skip it and the suffix keeps
 * it out of `*.parquet` globs (DuckDB's glob does not skip `_` files). Builds now stage whole
 * folders under `_parquet-staging/`, outside `parquet/`.
 */
export const stagingFileName = (dataset: AnyDataset, date: string): string => `_staging-${dataset}-${date}.parquet.partial`;
export const MANIFEST = '_manifest.json';
/**
 * Records a dataset's columns cannot hold exactly, set aside beside its part files: one JSON line per
 * record, `{market, seq, checkpoint, reason, record}`, `record` being the stored record byte for byte
 * as JSON. The leading `_` and the suffix keep it out of every engine's `*.parquet` read.
 */
export const QUARANTINE = '_quarantine.jsonl';

/** What a partition set aside (manifest field `quarantine`; absent when nothing was). */
export interface Quarantine {
  /**
   * Records set aside (`book_snapshots`: rows left out, the seconds whose book held such a record;
   * the records themselves are in `book_changes`' file).
   */
  readonly records: number;
  /** Per market, how many. */
  readonly markets: Readonly<Record<string, number>>;
  /** The file holding them (QUARANTINE), its size and sha256; absent for `book_snapshots`. */
  readonly file?: string;
  readonly bytes?: number;
  readonly sha256?: string;
}

/** One market's slice of one row group: the sparse index the reader binary-searches. */
export interface Segment {
  readonly market: string;
  readonly rg: number;
  /** First row of the slice within its row group, and its length. */
  readonly start: number;
  readonly rows: number;
  readonly minRecv: number;
  readonly maxRecv: number;
  readonly minSeq: number;
  readonly maxSeq: number;
}

export interface ManifestFile {
  readonly file: string;
  readonly rows: number;
  readonly bytes: number;
  readonly sha256: string;
  /** receive_time range, epoch ms (null for an empty file). */
  readonly min_time: number | null;
  readonly max_time: number | null;
  readonly schema_version: number;
  /**
   * Markets with rows in the file, in file order (written since the reader learned to open only the
   * files of the market it reads; absent in older manifests, whose readers open every file).
   */
  readonly markets?: readonly string[];
}

/**
 * One chunk of a market's record index: [first seq, last seq, first receive time, last receive
 * time (epoch ms), records]. Records of a stream (across its datasets) in seq order.
 */
export type RecordChunk = [number, number, number, number, number];

export interface Manifest {
  readonly family: Family;
  readonly dataset: AnyDataset;
  readonly date: string;
  /** Schema version of every file listed (absent in version 1 manifests). */
  readonly schema_version?: number;
  readonly files: readonly ManifestFile[];
  /** What was compacted: per market, the log bytes and last seq of that day (idempotent reruns). */
  readonly sources: Readonly<Record<string, { readonly bytes: number; readonly last_seq: number }>>;
  /** The record index of the stream's primary dataset (book_changes, metrics, catalog), per market. */
  readonly records?: Readonly<Record<string, readonly RecordChunk[]>>;
  /** Records the columns could not hold exactly, kept in QUARANTINE (see Quarantine). */
  readonly quarantine?: Quarantine;
  readonly created: string;
}

/** The schema version a manifest describes (1 for manifests written before the field existed). */
export function manifestVersion(m: Manifest): number {
  return m.schema_version ?? m.files[0]?.schema_version ?? 1;
}

export async function readManifest(dir: string): Promise<Manifest | null> {
  try {
    return JSON.parse(await readFile(join(dir, MANIFEST), 'utf8')) as Manifest;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
    if (e instanceof SyntaxError) return null; // never published half: treat as absent, a rerun rewrites it
    throw e;
  }
}

/** A partition of one day with its manifest, as dayManifests reads it. */
export interface DayManifest {
  readonly family: Family;
  readonly dataset: AnyDataset;
  /** Its path under the Parquet root (partitionRel), the same in the archive. */
  readonly rel: string;
  readonly dir: string;
  /** The manifest's bytes as stored: what is published, and what its sha256 is taken of. */
  readonly bytes: Buffer;
  readonly manifest: Manifest;
}

/**
 * The partitions of `day` that have a manifest, in listPartitions' order, each manifest read once
 * straight from its folder (a torn one counts as absent, as in readManifest). No listing of every
 * dataset's dates: its cost stays that of one day however long the history kept.
 */
export async function dayManifests(dataDir: string, day: string): Promise<DayManifest[]> {
  const found = await Promise.all(
    FAMILIES.flatMap((family) =>
      DATASET_FOLDERS.map(async (dataset): Promise<DayManifest | null> => {
        const dir = partitionDir(dataDir, family, dataset, day);
        const bytes = await readFile(join(dir, MANIFEST)).catch((e: NodeJS.ErrnoException) => {
          if (e.code === 'ENOENT' || e.code === 'ENOTDIR') return null;
          throw e;
        });
        if (bytes === null) return null;
        try {
          const manifest = JSON.parse(bytes.toString('utf8')) as Manifest;
          return { family, dataset, rel: partitionRel(family, dataset, day), dir, bytes, manifest };
        } catch {
          return null; // torn: never published half, a rerun of compaction rewrites it
        }
      }),
    ),
  );
  return found.filter((x) => x !== null);
}

/** Writes bytes to `dir/name` atomically (see durable.ts). */
export async function writeAtomic(dir: string, name: string, data: string | Uint8Array): Promise<void> {
  await writeFileDurable(join(dir, name), data);
}

export async function writeManifest(dir: string, m: Manifest): Promise<void> {
  await writeAtomic(dir, MANIFEST, JSON.stringify(m, null, 1) + '\n');
}

/** Removes leftovers of an interrupted run (staging and temp files); they were never visible. */
export async function removeStaging(dir: string): Promise<void> {
  for (const name of await readdirOrEmpty(dir)) {
    if (name.startsWith('_staging-') || name.startsWith('_tmp-') || isDurableTemp(name))
      await unlink(join(dir, name)).catch(() => undefined);
  }
}

export async function readdirOrEmpty(dir: string): Promise<string[]> {
  try {
    return await readdir(dir);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return [];
    throw e;
  }
}

export interface PartitionRef {
  readonly family: Family;
  readonly dataset: AnyDataset;
  readonly date: string;
  readonly dir: string;
}

/** Every partition folder under the Parquet root (with or without a manifest), sorted. */
export async function listPartitions(dataDir: string, filter: { family?: Family; dataset?: AnyDataset } = {}): Promise<PartitionRef[]> {
  // Every dataset folder read at once (the order of the result is the same as one after the other).
  const folders = FAMILIES.filter((f) => !filter.family || filter.family === f).flatMap((family) =>
    DATASET_FOLDERS.filter((d) => !filter.dataset || filter.dataset === d).map((dataset) => ({ family, dataset })),
  );
  const found = await Promise.all(
    folders.map(async ({ family, dataset }) => {
      const base = join(parquetRoot(dataDir), `family=${family}`, `dataset=${dataset}`);
      const out: PartitionRef[] = [];
      for (const name of (await readdirOrEmpty(base)).sort()) {
        const m = /^date=(\d{4}-\d{2}-\d{2})$/.exec(name);
        if (m && dayStartMs(m[1]) !== null) out.push({ family, dataset, date: m[1], dir: join(base, name) });
      }
      return out;
    }),
  );
  return found.flat();
}

/**
 * The last seq of `market`'s log in the newest compacted partition that holds it, or 0. A writer
 * reopened after retention deleted every log of its market continues from here, so seq never
 * restarts within one log (cursors, seq seeks and the latest-book cache rely on it rising).
 */
export async function lastCompactedSeq(dataDir: string, family: Family, datasets: readonly AnyDataset[], market: string): Promise<number> {
  let best = 0;
  for (const dataset of datasets) {
    const base = join(parquetRoot(dataDir), `family=${family}`, `dataset=${dataset}`);
    const dates = (await readdirOrEmpty(base))
      .filter((n) => /^date=\d{4}-\d{2}-\d{2}$/.test(n))
      .sort()
      .reverse();
    for (const name of dates) {
      const src = (await readManifest(join(base, name)))?.sources[market];
      if (src) {
        best = Math.max(best, src.last_seq);
        break;
      }
    }
  }
  return best;
}
