// Building one partition out of sight and publishing it in one step. Part files and the manifest are
// written under `<dataDir>/_parquet-staging/` (outside `parquet/`, so no glob ever meets a partial
// file), each fsynced and re-read to verify; then the whole folder is renamed into place and the
// parent fsynced. Files and manifest therefore appear together or not at all.

import { createHash } from 'node:crypto';
import { mkdir, open, rename, rm, stat, type FileHandle } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { Family } from '../../schema/observation.js';
import { toIso } from '../../schema/time.js';
import {
  QUARANTINE,
  partitionDir,
  removeStaging,
  stagingRoot,
  writeManifest,
  type Manifest,
  type ManifestFile,
  type Quarantine,
  type RecordChunk,
  type Segment,
} from './manifest.js';
import { ParquetFileReader } from './file.js';
import { int64At, int64Words, type ColumnValues } from './columns.js';
import { encodeParquetBatched } from './encode-batched.js';
import { fsyncDir } from '../durable.js';
import { SCHEMA_VERSION, columnsOf, type AnyDataset, type Dataset } from './datasets.js';
import { RowSink } from './rows.js';

/** Rows per row group: large enough for dictionaries and ZSTD to pay off, small enough to decode in a few ms. */
export const ROW_GROUP_ROWS = 16_384;
/**
 * `book_changes` rows are narrow and many: each row group carries its own dictionary pages, and at
 * 16,384 rows the size column's dictionary (sizes rarely repeat within a few thousand changes) cost
 * as much as the values. 65,536 rows make the same rows markedly smaller (`npm run bench -- parquet`
 * reports bytes a change); decoding one group stays quick.
 */
export const BOOK_CHANGES_ROW_GROUP_ROWS = 65_536;
export const rowGroupRowsOf = (dataset: AnyDataset): number => (dataset === 'book_changes' ? BOOK_CHANGES_ROW_GROUP_ROWS : ROW_GROUP_ROWS);
/** A part file is closed after the market that takes it past this many rows (bounds memory). */
export const FILE_ROWS = 100_000;

export { stagingRoot };
const stagingDir = (dataDir: string, f: Family, d: AnyDataset, day: string): string => join(stagingRoot(dataDir), `${f}.${d}.${day}`);
const retiredDir = (dataDir: string, f: Family, d: AnyDataset, day: string): string => join(stagingRoot(dataDir), `old.${f}.${d}.${day}`);

/**
 * Every part is numbered, the first too (`-0000`): in name order the parts hold the markets in
 * order. (Before 2026-11-27 the first part was `<dataset>-<date>.parquet`, which sorts after
 * `-0001` because `-` comes before `.`; compaction/compact-day.ts rebuilds such partitions while their logs exist.)
 */
export const partFileName = (dataset: AnyDataset, day: string, part: number): string =>
  `${dataset}-${day}-${String(part).padStart(4, '0')}.parquet`;

/** True when a partition's files are named as partFileName names them now (in part order). */
export const currentPartNames = (dataset: AnyDataset, day: string, files: readonly { readonly file: string }[]): boolean =>
  files.every((f, i) => f.file === partFileName(dataset, day, i));

const sha256 = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');

/** One market's contiguous rows per row group (of `groupRows` rows), with their time and seq ranges. */
export function segmentsOf(
  markets: ArrayLike<unknown>,
  times: ArrayLike<unknown>,
  seqs: ArrayLike<unknown>,
  groupRows = ROW_GROUP_ROWS,
): Segment[] {
  const out: Segment[] = [];
  let cur: { -readonly [K in keyof Segment]: Segment[K] } | null = null;
  for (let i = 0; i < markets.length; i++) {
    const rg = Math.floor(i / groupRows);
    const market = markets[i] as string;
    const t = times[i] as number;
    const s = seqs[i] as number;
    if (!cur || cur.market !== market || cur.rg !== rg) {
      if (cur) out.push(cur);
      cur = { market, rg, start: i - rg * groupRows, rows: 0, minRecv: t, maxRecv: t, minSeq: s, maxSeq: s };
    }
    cur.rows++;
    cur.maxRecv = Math.max(cur.maxRecv, t);
    cur.minRecv = Math.min(cur.minRecv, t);
    cur.maxSeq = Math.max(cur.maxSeq, s);
  }
  if (cur) out.push(cur);
  return out;
}

function minMax(xs: ArrayLike<number>): [number, number] {
  let lo = Infinity;
  let hi = -Infinity;
  for (let i = 0; i < xs.length; i++) {
    const x = xs[i];
    if (x < lo) lo = x;
    if (x > hi) hi = x;
  }
  return [lo, hi];
}

/**
 * Re-reads a written file and checks it against what was meant to be written: checksum of the
 * bytes on disk, the footer's row count, and the receive-time range decoded from the file itself.
 */
export async function verifyFile(path: string, want: ManifestFile): Promise<void> {
  const fh = await open(path, 'r');
  let onDisk: Buffer;
  try {
    onDisk = await fh.readFile();
  } finally {
    await fh.close();
  }
  if (onDisk.length !== want.bytes) throw new Error(`${path}: ${onDisk.length} bytes on disk, expected ${want.bytes}`);
  if (sha256(onDisk) !== want.sha256) throw new Error(`${path}: checksum does not match what was written`);
  const reader = await ParquetFileReader.open(path);
  try {
    if (reader.footer.rows !== want.rows) throw new Error(`${path}: footer says ${reader.footer.rows} rows, expected ${want.rows}`);
    const t = await reader.readAll(['receive_time']);
    // Read as raw words: Arrow's getter makes a BigInt and a BigInt division per row.
    let loUs = Infinity;
    let hiUs = -Infinity;
    for (const d of t.getChild('receive_time')!.data) {
      const w = int64Words(d);
      for (let i = 0; i < d.length; i++) {
        const us = int64At(w, i);
        if (us < loUs) loUs = us;
        if (us > hiUs) hiUs = us;
      }
    }
    const lo = loUs / 1000;
    const hi = hiUs / 1000;
    if (want.rows > 0 && (Math.abs(lo - want.min_time!) > 0.001 || Math.abs(hi - want.max_time!) > 0.001)) {
      throw new Error(`${path}: receive_time range ${lo}..${hi} differs from ${want.min_time}..${want.max_time}`);
    }
  } finally {
    reader.close();
  }
}

/** Accumulates one partition's rows into verified part files in its staging folder. */
export class PartitionBuilder {
  /** Rows not yet written to a part file; compaction appends a market's rows, then calls `added`. */
  readonly sink: RowSink;
  private readonly files: ManifestFile[] = [];
  readonly dir: string;
  total = 0;
  bytes = 0;
  /** Records (book_snapshots: rows) set aside, per market (see Quarantine). */
  readonly setAsideBy: Record<string, number> = {};
  private aside = { lines: [] as string[], pending: 0, bytes: 0, hash: createHash('sha256'), fh: null as FileHandle | null };

  constructor(
    readonly dataDir: string,
    readonly family: Family,
    readonly dataset: Dataset,
    readonly day: string,
    private readonly onStep?: (s: string) => void,
    private readonly fileRows = FILE_ROWS,
    /** Names of the part files as written; a share of a split build writes temporary ones (see adopt). */
    private readonly partName: (part: number) => string = (part) => partFileName(dataset, day, part),
  ) {
    this.dir = stagingDir(dataDir, family, dataset, day);
    this.sink = new RowSink(columnsOf(family, dataset));
  }

  async start(): Promise<void> {
    await rm(this.dir, { recursive: true, force: true }); // leftovers of an interrupted run
    await mkdir(this.dir, { recursive: true });
  }

  /** Writes into the staging folder another builder of the same partition started (a helper thread's share). */
  async join(): Promise<void> {
    await mkdir(this.dir, { recursive: true });
  }

  /** Writes the rows still in the sink as a part file (if any); the part files written so far, in order. */
  async cut(): Promise<readonly ManifestFile[]> {
    await this.flush();
    return this.files;
  }

  /**
   * Takes in the part files a helper thread wrote into this staging folder (for the markets it
   * claimed) beside this builder's own, and renames every part to the partition's names in the
   * order of their first market in `markets` (each is fsynced and verified; a rename changes no byte).
   * Then `publish` as usual.
   */
  async adopt(helped: readonly ManifestFile[], markets: readonly string[]): Promise<void> {
    const rank = new Map(markets.map((m, i) => [m, i]));
    const all = [...helped, ...this.files].sort((a, b) => rank.get(a.markets![0])! - rank.get(b.markets![0])!);
    this.files.length = 0;
    this.total = 0;
    this.bytes = 0;
    for (const [i, f] of all.entries()) {
      const name = partFileName(this.dataset, this.day, i);
      if (f.file !== name) await rename(join(this.dir, f.file), join(this.dir, name));
      this.files.push({ ...f, file: name });
      this.total += f.rows;
      this.bytes += f.bytes;
    }
    await fsyncDir(this.dir);
  }

  /** Called after a market's rows were appended to `sink`: a part file is written once enough gathered. */
  async added(): Promise<void> {
    if (this.sink.length >= this.fileRows) await this.flush();
  }

  /** `empty`: write a part even without rows (a partition's only file: engines then read the schema). */
  private async flush(empty = false): Promise<void> {
    const n = this.sink.length;
    if (n === 0 && !empty) return;
    const base = { family: this.family, dataset: this.dataset, date: this.day };
    const specs = columnsOf(this.family, this.dataset);
    const times = this.sink.column('receive_time') as ArrayLike<number>;
    const segments = segmentsOf(this.sink.column('market_id'), times, this.sink.column('seq'), rowGroupRowsOf(this.dataset));
    const metadata = new Map([
      ['pmtape.schema_version', String(SCHEMA_VERSION)],
      ['pmtape.partition', JSON.stringify(base)],
      ['pmtape.segments', JSON.stringify(segments)],
    ]);
    const bytes = await encodeParquetBatched(specs, this.sink.cols as readonly ColumnValues[], {
      rowGroupRows: rowGroupRowsOf(this.dataset),
      metadata,
    });
    const [lo, hi] = minMax(times);
    this.sink.clear();
    const entry: ManifestFile = {
      // The empty file is the partition's only part: its final name even in a split build's share.
      file: n === 0 ? partFileName(this.dataset, this.day, 0) : this.partName(this.files.length),
      rows: n,
      bytes: bytes.length,
      sha256: sha256(bytes),
      min_time: n > 0 ? lo : null,
      max_time: n > 0 ? hi : null,
      schema_version: SCHEMA_VERSION,
      markets: [...new Set(segments.map((g) => g.market))],
    };
    const path = join(this.dir, entry.file);
    const fh = await open(path, 'w');
    try {
      await fh.writeFile(bytes);
      await fh.sync();
    } finally {
      await fh.close();
    }
    this.onStep?.('staged');
    await verifyFile(path, entry);
    this.onStep?.('verified');
    this.files.push(entry);
    this.total += entry.rows;
    this.bytes += entry.bytes;
  }

  /** Records set aside so far (book_snapshots: rows). */
  get setAside(): number {
    let n = 0;
    for (const k in this.setAsideBy) n += this.setAsideBy[k];
    return n;
  }

  /**
   * Sets aside what the columns cannot hold: `line` (one JSON line, a whole record) goes to the
   * partition's QUARANTINE file; without a line it is only counted (book_snapshots' rows).
   */
  async quarantine(market: string, line?: string, n = 1): Promise<void> {
    this.setAsideBy[market] = (this.setAsideBy[market] ?? 0) + n;
    if (line === undefined) return;
    const a = this.aside;
    a.lines.push(line + '\n');
    a.pending += line.length + 1;
    if (a.pending >= 1 << 18) await this.writeAside();
  }

  private async writeAside(): Promise<void> {
    const a = this.aside;
    if (a.lines.length === 0) return;
    const buf = Buffer.from(a.lines.join(''));
    a.lines = [];
    a.pending = 0;
    a.fh ??= await open(join(this.dir, QUARANTINE), 'w');
    await a.fh.write(buf);
    a.hash.update(buf);
    a.bytes += buf.length;
  }

  /** The manifest's `quarantine` field, after the file (if any) is written out and fsynced. */
  private async closeAside(): Promise<Quarantine | undefined> {
    const n = this.setAside;
    if (n === 0) return undefined;
    await this.writeAside();
    const a = this.aside;
    const markets = Object.fromEntries(Object.entries(this.setAsideBy).sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0)));
    if (!a.fh) return { records: n, markets };
    await a.fh.sync();
    await a.fh.close();
    a.fh = null;
    return { records: n, markets, file: QUARANTINE, bytes: a.bytes, sha256: a.hash.digest('hex') };
  }

  /** Adds the counts of part files a helper thread built (their quarantine is counted only). */
  addSetAside(by: Readonly<Record<string, number>>): void {
    for (const [m, n] of Object.entries(by)) this.setAsideBy[m] = (this.setAsideBy[m] ?? 0) + n;
  }

  /** Writes the last part and the manifest, then swaps the folder into `parquet/`. */
  async publish(sources: Manifest['sources'], records?: Record<string, RecordChunk[]>): Promise<void> {
    // A day without rows still gets one (empty) file: a partition of only `_manifest.json` made
    // DuckDB's documented glob fail ("No files found") and polars raise.
    await this.flush(this.files.length === 0);
    const quarantine = await this.closeAside();
    await writeManifest(this.dir, {
      family: this.family,
      dataset: this.dataset,
      date: this.day,
      schema_version: SCHEMA_VERSION,
      files: this.files,
      sources,
      ...(records ? { records } : {}),
      ...(quarantine ? { quarantine } : {}),
      created: toIso(Date.now()),
    });
    this.onStep?.('manifest');
    const final = partitionDir(this.dataDir, this.family, this.dataset, this.day);
    await mkdir(dirname(final), { recursive: true });
    const exists = await stat(final).then(
      () => true,
      () => false,
    );
    const retired = retiredDir(this.dataDir, this.family, this.dataset, this.day);
    if (exists) {
      // A rebuild: the old folder steps aside first. A crash right here leaves the partition absent
      // (its logs still exist, so readers use them) and `recoverPartition` puts the old one back.
      await rm(retired, { recursive: true, force: true });
      await rename(final, retired);
      this.onStep?.('retired');
    }
    await rename(this.dir, final);
    await fsyncDir(dirname(final));
    this.onStep?.('renamed');
    if (exists) await rm(retired, { recursive: true, force: true });
    this.onStep?.('published');
  }

  async abandon(): Promise<void> {
    await this.aside.fh?.close().catch(() => undefined);
    this.aside.fh = null;
    await rm(this.dir, { recursive: true, force: true });
  }
}

/**
 * A partition older code published with no file at all (a day without rows), whose logs are gone so
 * it cannot be rebuilt: published again with one empty file, the same sources and record index.
 */
export async function publishEmpty(dataDir: string, m: Manifest, onStep?: (s: string) => void): Promise<void> {
  const b = new PartitionBuilder(dataDir, m.family, m.dataset as Dataset, m.date, onStep);
  await b.start();
  await b.publish(m.sources, m.records as Record<string, RecordChunk[]> | undefined);
}

/**
 * Before a partition is checked or rebuilt: an interrupted rebuild is undone (recoverPartition) and
 * temp files of an interrupted manifest write in the published folder are removed.
 */
export async function settleLeftovers(dataDir: string, family: Family, dataset: AnyDataset, day: string): Promise<void> {
  await recoverPartition(dataDir, family, dataset, day);
  await removeStaging(partitionDir(dataDir, family, dataset, day));
}

/** Undoes a rebuild interrupted between its two renames: the old partition goes back in place. */
export async function recoverPartition(dataDir: string, family: Family, dataset: AnyDataset, day: string): Promise<void> {
  const final = partitionDir(dataDir, family, dataset, day);
  const retired = retiredDir(dataDir, family, dataset, day);
  if (
    !(await stat(retired).then(
      () => true,
      () => false,
    ))
  )
    return;
  if (
    await stat(final).then(
      () => true,
      () => false,
    )
  )
    await rm(retired, { recursive: true, force: true });
  else {
    await mkdir(dirname(final), { recursive: true });
    await rename(retired, final);
    await fsyncDir(dirname(final));
  }
}
