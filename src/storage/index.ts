// The storage layer's door for the product: everything outside src/storage (recorders, API,
// commands, pull) imports from here and nothing else, and it names only what they use. Readers go
// through `openReader`, which serves a key's compacted days from Parquet and the rest from its logs.
// Tests and benchmarks that drive storage's internals use src/storage/testing.ts instead.

import { openLogReader } from './read/reader.js';
import { compositeReader } from './read/composite-reader.js';
import { parquetStore, type ParquetStore } from './parquet/reader.js';
import type { RowsRequest } from './compaction/dataset-rows.js';
import type { LogKey, LogReader } from './types.js';
import type { Family, StreamName } from '../schema/observation.js';
import type { CompactOptions, PartitionResult } from './compaction/compact-day.js';
import type { ArchiveConfig } from '../config.js';
import type { SyncOptions, SyncResult } from './archive/sync.js';
import type { VerifyCounts, VerifyHooks } from './archive/verify.js';
import type { ArchiveReader } from './archive/read.js';
import type { MergeOptions, MergeResult } from './merge/merge.js';

export type {
  AppendOptions,
  FileCheck,
  LogKey,
  LogReader,
  LogView,
  LogWriter,
  Position,
  ReadItem,
  RecordChunk,
  ReplayFrom,
  SpanHint,
  WriterOptions,
} from './types.js';
export { openWriter } from './log/open-writer.js';
export { freeBytes } from './disk-space.js';
export { acquireLock } from './log/lock.js';
export { setIndexCacheBytes } from './read/segment.js';
export { LogChanges, type LogChangeSubscription } from './read/log-changes.js';
export { logStamp, logStampSync, parquetStamp, sameStamp, type LogStamp } from './read/log-stamp.js';
export { logCensus, type CensusLog } from './read/log-census.js';
export { listMarkets, logsRoot, streamDir } from './paths.js';
export { verifyDataDir } from './verify.js';
// Parquet side. Compaction loads parquet-wasm, so it is reached through lazy wrappers: importing
// this door must stay cheap for the recorders, the API and the CLI's other commands.
export { listPartitions, parquetRoot, partitionDir, partitionRel, readManifest, type ManifestFile } from './parquet/manifest.js';
export { DATASETS, ROW_DATASETS, type Dataset } from './parquet/datasets.js';
export { deleteExpiredLogs } from './compaction/retention.js';
export {
  CANDLE_DATASET_INTERVAL_MS,
  CANDLE_INTERVALS,
  candleScales,
  candlesOf,
  type Candle,
  type CandleOutcome,
  type CandleQuery,
  type Ohlc,
} from './candles/candles.js';
export { CandleBuilder, candleOutcomes } from './candles/candle-builder.js';
export { checkPartitions } from './parquet/partition-check.js';
export { warmDatasetRows, warmParquet } from './compaction/warm-up.js';
// A store of its own (its own decode cache), for reads that must leave the process-wide one untouched.
export { ParquetStore } from './parquet/reader.js';
export { startAutoCompaction } from './compaction/auto.js';
export type { PartitionResult } from './compaction/compact-day.js';
// Archive side (object storage). The S3 SDK is loaded on first use only, like compaction's decoder.
export { archiveLag, unpublishedDays, type ArchiveLag } from './archive/lag.js';
export { uploadErrors as archiveUploadErrors, publishTarget } from './archive/layout.js';
export type { MergeOptions, MergeResult } from './merge/merge.js';
export type { ArchiveReader } from './archive/read.js';
export { writeFileDurable, writeFileDurableSync } from './durable.js';

/** Compacts every closed log of `day` into Parquet partitions (see compaction/compact-day.ts). */
export async function compactDay(dataDir: string, day: string, opts: CompactOptions = {}): Promise<PartitionResult[]> {
  return (await import('./compaction/compact-day.js')).compactDay(dataDir, day, opts);
}

/**
 * One market's rows of a record dataset over a receive-time range as Arrow IPC pieces (see
 * compaction/dataset-rows.ts), read through the process's shared Parquet store. Loaded on first use,
 * as compaction is: a process that never serves one never loads the decoder.
 */
export async function* datasetRows(dataDir: string, req: RowsRequest): AsyncGenerator<Uint8Array> {
  const { datasetRowsIPC } = await import('./compaction/dataset-rows.js');
  yield* datasetRowsIPC(dataDir, parquetStore(dataDir), req);
}

/** The closed UTC days that have logs, oldest first (see compaction/compact-day.ts). */
export async function closedLogDays(dataDir: string, now: number): Promise<string[]> {
  return (await import('./compaction/compact-day.js')).closedLogDays(dataDir, now);
}

/** The compacted dates of a stream, ascending (the process's Parquet store; one stat when unchanged). */
export function parquetDates(dataDir: string, family: Family, stream: StreamName): Promise<string[]> {
  return parquetStore(dataDir).dates(family, stream);
}

/** The reader of a logical log for the read side and the stream. */
export function openReader(dataDir: string, key: LogKey, store?: ParquetStore): LogReader {
  return compositeReader(dataDir, key, openLogReader(dataDir, key), store); // compacted days come from Parquet
}

/** Publishes compacted days to the archive (see archive/sync.ts). */
export async function syncArchive(dataDir: string, archive: ArchiveConfig, opts: SyncOptions = {}): Promise<SyncResult> {
  return (await import('./archive/sync.js')).syncArchive(dataDir, archive, opts);
}

export { remoteFile, type RemoteFile } from './parquet/remote-files.js';

/** Mounts the archive's closed days into a reader's data dir (see archive/mount.ts). */
export async function mountArchive(
  dataDir: string,
  archive: ArchiveConfig,
  cacheBytes: number,
  warn?: (msg: string) => void,
): Promise<import('./archive/mount.js').ArchiveMount> {
  return (await import('./archive/mount.js')).mountArchive(dataDir, archive, cacheBytes, warn);
}

/** Publishes the API keys' file to the archive with conditional writes (see archive/keys-object.ts). */
export async function publishKeys(archive: ArchiveConfig, merge: (current: string | null) => Promise<string>): Promise<string> {
  return (await import('./archive/keys-object.js')).publishKeys(archive, merge);
}

/** A reader's copy of the archive's keys file, kept at `localPath` (see archive/keys-object.ts). */
export async function followKeys(
  archive: ArchiveConfig,
  localPath: string,
  everyMs: number,
  warn: (msg: string) => void,
): Promise<() => void> {
  return (await import('./archive/keys-object.js')).followKeys(archive, localPath, everyMs, warn);
}

/** Checks archived days against their manifests from the bucket alone (see archive/verify.ts). */
export async function verifyArchive(
  archive: ArchiveConfig,
  days: readonly string[] | null,
  hooks: VerifyHooks = {},
): Promise<VerifyCounts> {
  const { archiveClient } = await import('./archive/client.js');
  const { verifyArchive: verify } = await import('./archive/verify.js');
  const s3 = archiveClient(archive);
  try {
    return await verify(s3, archive, days, hooks);
  } finally {
    s3.destroy();
  }
}

/** Builds and publishes the canonical day of a shared archive from its recorders' (see merge/merge.ts). */
export async function mergeArchiveDay(archive: ArchiveConfig, day: string, opts: MergeOptions = {}): Promise<MergeResult> {
  return (await import('./merge/merge.js')).mergeDay(archive, day, opts);
}

/** Reads the archive as a consumer: its published files and their bytes (see archive/read.ts). */
export async function openArchiveReader(archive: ArchiveConfig): Promise<ArchiveReader> {
  return (await import('./archive/read.js')).openArchiveReader(archive);
}

// Tardis-format CSV files of compacted days (see tardis/files.ts, docs/tardis.md).
export {
  TARDIS_DATA_TYPES,
  tardisHeader,
  type TardisDataType,
  type TardisDecode,
  type TardisRequest,
  type TardisView,
} from './tardis/rows.js';
export { findTardisSymbol, symbolPart, tardisFile, tardisMarkets, tardisSymbols, type TardisSymbol } from './tardis/files.js';
