// The storage layer's entry for tests and benchmarks: the product's door (index.ts) plus the
// internals they drive directly: paths of log files, the frame and time-index codecs, the process's
// shared Parquet store, fault injection. Product code never imports this file (test/architecture).

export * from './index.js';
export type { ReplayItem } from './types.js';
export {
  decodeMarket,
  encodeMarket,
  indexFilePath,
  isDayClosed,
  listDays,
  listKeys,
  lockFilePath,
  logFilePath,
  marketDir,
} from './paths.js';
export { openLogReader } from './read/reader.js';
export { indexCacheBytes } from './read/segment.js';
export { checkLogFile } from './verify.js';
export { fsyncDir } from './durable.js';
export { lockHolder } from './log/lock.js';
export { injectDiskFault } from './log/disk-faults.js';
export { FILE_HEADER_BYTES } from './log/file-header.js';
export { decodeRecord, encodeFrame, encodeFrameAt, parseFrame, PREFIX_BYTES, writeI64 } from './log/frame.js';
export { DEFAULT_INDEX_EVERY_BYTES, IndexEntries, encodeEntry } from './log/time-index.js';
// Compaction loaded up front, not on first use as through the door: a benchmark times compaction,
// not the loading of its modules.
export { compactDay, readLogDay } from './compaction/compact-day.js';
export { encodeParquet } from './parquet/file.js';
export type { ColumnSpec } from './parquet/columns.js';
export { parquetStore } from './parquet/reader.js';
export { stagingFileName } from './parquet/manifest.js';
export { columnsOf, DATASET_FOLDERS, type RowDataset } from './parquet/datasets.js';
export { encodeDecimal } from './parquet/decimal.js';
export { PART_SIZE } from './archive/objects.js';
export { writePublished } from './archive/layout.js';
export { scanBooks, scanCompactedBooks } from './merge/scan.js';
export { mergeSplitCounts } from './merge/merge.js';
