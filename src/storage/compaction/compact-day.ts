// Compaction: the closed UTC day of every market's logs of one family becomes one Parquet partition
// per dataset, built out of sight and published in one rename (see publish.ts). A rerun skips
// partitions whose manifest covers the current logs and whose files still match their checksums;
// a schema-version-1 partition is rebuilt as version 2 (see stream-compaction.ts).

import { createHash } from 'node:crypto';
import { mkdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { FAMILIES, type Family } from '../../schema/observation.js';
import { listPartitions, manifestVersion, partitionDir, readManifest, type Manifest } from '../parquet/manifest.js';
import { SCHEMA_VERSION, datasetsOfStream, derivedOfStream, type Dataset, type Stream } from '../parquet/datasets.js';
import { buildStream, legacyPartition, type LegacyPartition } from './stream.js';
import { DerivedHelper, startDerivedSplit } from './derived-split.js';
import { buildDerived } from './derived.js';
import { isDiskError } from './input.js';
import { writeCoverageSummary } from '../parquet/coverage-summary.js';
import { writeLogCensus } from '../read/log-census.js';
import { currentPartNames, publishEmpty, settleLeftovers, stagingRoot } from '../parquet/publish.js';
import { acquireLock } from '../log/lock.js';
import { LockedError, StorageError } from '../../errors.js';
import { isDayClosed, listDays, listMarkets, logFilePath } from '../paths.js';

export { readLogDay, type CompactOptions, type PartitionResult } from './input.js';
import type { CompactOptions, PartitionResult } from './input.js';

const sha256 = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');

async function fileSize(path: string): Promise<number | null> {
  try {
    return (await stat(path)).size;
  } catch {
    return null;
  }
}

/** Markets of `family` with a log file for `day` in `stream`, and the files' sizes. */
async function sourcesOf(dataDir: string, family: Family, stream: Stream, day: string): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const market of await listMarkets(dataDir, family, stream)) {
    const size = await fileSize(logFilePath(dataDir, { family, stream, market }, day));
    if (size !== null) out[market] = size;
  }
  return out;
}

/**
 * What to do with a v2 partition given the logs present now: 'done' when its manifest is schema
 * version 2, covers every present log at the same size and its files match their checksums;
 * 'rebuild' otherwise; 'blocked' when it would have to be rebuilt but some market it holds has no
 * log any more (retention already deleted it), so a rebuild would lose rows.
 */
async function stateOf(
  dir: string,
  sources: Record<string, number>,
): Promise<{ state: 'done' | 'rebuild' | 'blocked'; m: Manifest | null }> {
  const m = await readManifest(dir);
  if (!m) return { state: 'rebuild', m };
  if (manifestVersion(m) < SCHEMA_VERSION) return { state: 'rebuild', m }; // migrated (from its logs or itself)
  let same = true;
  for (const k of Object.keys(sources)) if (m.sources[k]?.bytes !== sources[k]) same = false;
  if (same) {
    for (const f of m.files) {
      const bytes = await readFile(join(dir, f.file)).catch(() => null);
      if (!bytes || bytes.length !== f.bytes || sha256(bytes) !== f.sha256) same = false;
    }
  }
  const gone = Object.keys(m.sources).some((k) => sources[k] === undefined);
  // Written by older code (a first part named without its number, or no file at all on a day
  // without rows): rebuilt while every log is here, else kept as it is (still readable).
  if (same && (m.files.length === 0 || !currentPartNames(m.dataset, m.date, m.files))) return { state: gone ? 'done' : 'rebuild', m };
  if (same) return { state: 'done', m };
  return { state: gone ? 'blocked' : 'rebuild', m };
}

/**
 * Compacts one family's stream for one closed day into its v2 partitions (see stream-compaction.ts).
 * `now`: what is done when this resolves; `later`: a derived partition still being built beside the
 * next streams' work (derived-split.ts), published after its records.
 */
export async function compactStream(
  dataDir: string,
  family: Family,
  stream: Stream,
  day: string,
  opts: CompactOptions,
  helper: DerivedHelper,
): Promise<{ now: PartitionResult[]; later: Promise<PartitionResult[]> | null }> {
  const records = await planRecords(dataDir, family, stream, day, opts);
  if ('settled' in records) {
    // Derived datasets are checked even when the logs are gone: a tree compacted before one existed gets it.
    return { now: [...records.settled, ...(await buildDerived(dataDir, family, stream, day, opts))], later: null };
  }
  const { sources, legacy } = records;
  // Built beside the records when every market's log is here (the usual day); otherwise after them.
  const fromLogsOnly = !legacy || Object.keys(legacy.manifest.sources).every((m) => sources[m] !== undefined);
  const split = fromLogsOnly ? await startDerivedSplit(dataDir, family, stream, day, sources, opts, helper) : null;
  let written: PartitionResult[];
  try {
    written = await buildStream(dataDir, family, stream, day, sources, legacy, opts);
  } catch (e) {
    await split?.abandon().catch(() => undefined);
    throw e;
  }
  // The split builds the first derived dataset (book_snapshots) beside the records; the rest after it.
  if (split)
    return {
      now: written,
      later: split
        .finish()
        .then(async (r) => [...r, ...(await buildDerived(dataDir, family, stream, day, opts, derivedOfStream(stream).slice(1)))]),
    };
  return { now: [...written, ...(await buildDerived(dataDir, family, stream, day, opts))], later: null };
}

/**
 * A partition older code published without any file (a day without rows) that cannot be rebuilt
 * (some of its logs are gone): engines' globs failed on it, so it gets one empty file.
 */
async function fillEmpty(dataDir: string, family: Family, stream: Stream, day: string, sources: Record<string, number>): Promise<void> {
  for (const dataset of datasetsOfStream(stream)) {
    await settleLeftovers(dataDir, family, dataset, day);
    const m = await readManifest(partitionDir(dataDir, family, dataset, day));
    if (!m || manifestVersion(m) < SCHEMA_VERSION || m.files.length > 0) continue;
    const keys = Object.keys(m.sources);
    if (keys.length === 0 || keys.some((k) => sources[k] === undefined)) await publishEmpty(dataDir, m);
  }
}

/**
 * The datasets that hold the stream's records (datasetsOfStream): `settled` when nothing is to be
 * built (current, blocked or no logs), otherwise what `buildStream` builds them from.
 */
async function planRecords(
  dataDir: string,
  family: Family,
  stream: Stream,
  day: string,
  opts: CompactOptions,
): Promise<{ settled: PartitionResult[] } | { sources: Record<string, number>; legacy: LegacyPartition | null }> {
  const sources = await sourcesOf(dataDir, family, stream, day);
  const legacy = await legacyPartition(dataDir, family, stream, day);
  if (!opts.dryRun) await fillEmpty(dataDir, family, stream, day, sources);
  if (Object.keys(sources).length === 0 && !legacy) return { settled: [] };
  const datasets = datasetsOfStream(stream);
  const states: { dataset: Dataset; state: 'done' | 'rebuild' | 'blocked'; m: Manifest | null }[] = [];
  for (const dataset of datasets) {
    const dir = partitionDir(dataDir, family, dataset, day);
    if (!opts.dryRun) await settleLeftovers(dataDir, family, dataset, day);
    states.push({ dataset, ...(await stateOf(dir, sources)) });
  }
  const totals = (m: Manifest | null) => ({
    rows: m?.files.reduce((a, f) => a + f.rows, 0) ?? 0,
    bytes: m?.files.reduce((a, f) => a + f.bytes, 0) ?? 0,
    ...(m?.quarantine?.records ? { quarantined: m.quarantine.records } : {}),
  });
  // The datasets of one stream share the record index: they are rebuilt together or not at all.
  const migrating = legacy !== null && legacy.version < SCHEMA_VERSION;
  if (!migrating && states.every((x) => x.state === 'done'))
    return { settled: states.map((x) => ({ family, dataset: x.dataset, date: day, status: 'unchanged', ...totals(x.m) })) };
  if (!migrating && states.some((x) => x.state === 'blocked'))
    return { settled: states.map((x) => ({ family, dataset: x.dataset, date: day, status: 'blocked', ...totals(x.m) })) };
  return { sources, legacy };
}

/**
 * Closed days (before today, UTC) that have at least one log file, or a schema-version-1 partition
 * still to migrate, ascending.
 */
export async function closedLogDays(dataDir: string, now: number): Promise<string[]> {
  const days = new Set<string>();
  for (const p of await listPartitions(dataDir)) {
    const m = await readManifest(p.dir);
    if (m && manifestVersion(m) < SCHEMA_VERSION && isDayClosed(p.date, now)) days.add(p.date);
  }
  for (const family of FAMILIES) {
    for (const stream of ['books', 'metrics', 'catalog'] as const) {
      for (const market of await listMarkets(dataDir, family, stream)) {
        for (const d of await listDays(dataDir, { family, stream, market })) if (isDayClosed(d, now)) days.add(d);
      }
    }
  }
  return [...days].sort();
}

/** Results in the order of families, then datasets (as a one-thread compaction finds them). */
const ORDER = new Map<string, number>(
  FAMILIES.flatMap((f) =>
    (['books', 'metrics', 'catalog'] as const).flatMap((s) => [...datasetsOfStream(s), ...derivedOfStream(s)].map((d) => `${f}/${d}`)),
  ).map((k, i) => [k, i]),
);
const byPartition = (a: PartitionResult, b: PartitionResult): number =>
  ORDER.get(`${a.family}/${a.dataset}`)! - ORDER.get(`${b.family}/${b.dataset}`)!;

/**
 * Compacts every (family, dataset) partition of one closed day. One compactor per data dir at a
 * time (`start`'s background compaction and a manual `pmtape compact` would otherwise race on the
 * same staging folders): a second one is refused with a message naming the running one.
 */
export async function compactDay(dataDir: string, day: string, opts: CompactOptions = {}): Promise<PartitionResult[]> {
  if (!isDayClosed(day, Date.now())) throw new Error(`day ${day} is not closed yet (only UTC days before today are compacted)`);
  let release: () => Promise<void> = async () => undefined;
  if (!opts.dryRun) {
    try {
      await mkdir(stagingRoot(dataDir), { recursive: true });
      release = await acquireLock(join(stagingRoot(dataDir), '.lock'));
    } catch (e) {
      if (e instanceof LockedError) {
        throw new StorageError(`another compaction (process ${e.holderPid}) is running on ${dataDir}; wait for it to finish or stop it`);
      }
      throw e;
    }
  }
  const helper = new DerivedHelper();
  const pending: Promise<void>[] = [];
  try {
    const out: PartitionResult[] = [];
    const report = (rs: readonly PartitionResult[]): void => {
      for (const r of rs) {
        opts.onPartition?.(r);
        out.push(r);
      }
    };
    // One stream's failure never stops the others: its partitions are reported `failed` with the
    // reason, its logs stay, and the rest of the day is compacted. A full or failing disk is the
    // exception: every other partition would fail the same way, so the run stops (nothing is lost).
    const failed = (family: Family, datasets: readonly Dataset[], e: unknown): PartitionResult[] => {
      if (isDiskError(e)) throw e;
      return datasets.map((dataset) => ({
        family,
        dataset,
        date: day,
        status: 'failed',
        rows: 0,
        bytes: 0,
        error: (e as Error)?.message ?? String(e),
      }));
    };
    for (const family of FAMILIES) {
      for (const stream of ['books', 'metrics', 'catalog'] as const) {
        let result: Awaited<ReturnType<typeof compactStream>>;
        try {
          result = await compactStream(dataDir, family, stream, day, opts, helper);
        } catch (e) {
          report(failed(family, [...datasetsOfStream(stream), ...derivedOfStream(stream)], e));
          continue;
        }
        const { now, later } = result;
        report(now);
        if (later) {
          const done = later.then(report, (e: unknown) => report(failed(family, derivedOfStream(stream), e)));
          done.catch(() => undefined); // a disk error: handled by Promise.all below, but it may fail before that runs
          pending.push(done);
        }
      }
    }
    await Promise.all(pending);
    // Last, after every partition of the day: the families' coverage summaries (a page over the day
    // reads one file, not every manifest). Without one (a failure here, older trees) pages read the
    // manifests as before, so a failure to write it fails nothing; a full disk still stops the run.
    // Then a census of every stream's logs (log-census.ts): its stamps spare a page a listing and a
    // stat per log that the day journal does not name as changed since.
    const optional = (e: unknown): void => {
      if (isDiskError(e)) throw e;
    };
    if (!opts.dryRun)
      for (const family of FAMILIES) {
        await writeCoverageSummary(dataDir, family, day).catch(optional);
        for (const stream of ['books', 'metrics', 'catalog'] as const) await writeLogCensus(dataDir, family, stream).catch(optional);
      }
    return out.sort(byPartition);
  } finally {
    await helper.close(); // after a failure: stops a helper job still running (its caller abandons it)
    await Promise.allSettled(pending);
    await release();
  }
}
