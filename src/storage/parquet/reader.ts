// Serving stored records back out of compacted partitions. A v2 stream's primary manifest carries a
// record index (seq and time ranges per chunk of records) and every file's footer a sparse index
// (one segment per market per row group), so a query decodes only the row groups of the chunks it
// needs and rebuilds their records from typed columns (records.ts). Schema-version-1 partitions
// (one `record` JSON per row) are still served until `compact` migrates them. Decoded chunks and
// row groups live in one LRU bounded by bytes, shared by all readers.

import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { LRUCache } from 'lru-cache';
import type { Family } from '../../schema/observation.js';
import { MANIFEST, manifestVersion, partitionDir, readManifest, readdirOrEmpty, parquetRoot, type Manifest } from './manifest.js';
import { PartitionFiles, type FileSegment, type MarketFiles, type OpenFile } from './partition-files.js';
import { datasetsOfStream, streamOfDataset, type AnyDataset, type Dataset, type Stream } from './datasets.js';
import { readCoverageSummary, summaryFileStamp, type CoverageSummary, type DaySummary } from './coverage-summary.js';
import { int64Words } from './columns.js';
import { decodeDataset, recordsOf, type Columns, type RecordRow } from './records.js';
import { DecodedGroup, joinSlices, lowerBound, type RawGroup } from './decoded-group.js';

/** A loaded coverage summary: the folders' mtimes and the file's stamp it was loaded under. */
interface SummaryEntry {
  readonly key: string;
  p: Promise<CoverageSummary | null>;
  checkedAt: number;
  readonly file: string;
  /** Indexes in SUMMARY_DATASETS of the datasets of the streams it holds rows of (once loaded). */
  streams?: number[];
}

/** The record datasets a coverage summary is made from (their folders' mtimes keep it current). */
const SUMMARY_DATASETS: readonly Dataset[] = (['books', 'metrics', 'catalog'] as const).flatMap((s) => datasetsOfStream(s));

/** The rows of one market in one compacted day: its segments, decoded on demand. */
export interface MarketDay {
  readonly day: string;
  readonly segments: readonly FileSegment[];
  /** Rows before each segment (row index of the market's day = position offset). */
  readonly firstRow: readonly number[];
  readonly rows: number;
  group(seg: FileSegment): Promise<DecodedGroup>;
}

export type { FileSegment } from './partition-files.js';
export type { DecodedGroup } from './decoded-group.js';
export type { DaySummary } from './coverage-summary.js';

/** A published partition: its manifest at once, its files only when a market in it is read. */
interface OpenPartition {
  readonly dataset: AnyDataset;
  readonly stamp: string;
  readonly dir: string;
  readonly manifest: Manifest;
  /** Markets whose logs went into it (from the manifest): others never open the files. */
  readonly markets: ReadonlySet<string>;
  readonly files: PartitionFiles;
}

/** Decoded row groups, bounded by bytes; shared by every reader of the process. */
const DEFAULT_CACHE_BYTES = 256 * 1024 * 1024;

export class ParquetStore {
  private readonly cache: LRUCache<string, DecodedGroup | RawGroup>;
  private readonly open = new Map<string, Promise<OpenPartition | null>>();
  /** Row groups decoded so far (cache misses): tests and benchmarks check that seeks stay narrow. */
  decodes = 0;
  /**
   * Recent answers of dates() and partition(), valid while the dataset folder's mtime holds (every
   * publication or rebuild renames a date folder in it): a live market with a year of compacted
   * history would otherwise cost a listing and hundreds of stats per read.
   */
  private readonly recentDates = new Map<string, { mtimeMs: number; dates: string[] }>();
  private readonly recentParts = new Map<string, { parentMtimeMs: number; p: OpenPartition }>();
  /** The record datasets' folders of each family, in SUMMARY_DATASETS order. */
  private readonly summaryBases = new Map<Family, string[]>();
  private readonly summaries = new LRUCache<string, SummaryEntry>({ max: 4096 });

  constructor(
    readonly dataDir: string,
    maxBytes = DEFAULT_CACHE_BYTES,
  ) {
    this.cache = new LRUCache<string, DecodedGroup | RawGroup>({ maxSize: maxBytes, sizeCalculation: (g) => Math.max(1, g.bytes) });
  }

  /** Dates with a compacted partition of (family, stream) in either schema version, ascending. */
  async dates(family: Family, stream: Stream): Promise<string[]> {
    const datasets = datasetsOfStream(stream);
    const primary = datasets[0];
    if (primary === stream) return this.datesOf(family, primary); // metrics and catalog kept their folder name
    // The stream's other datasets (trades, gaps) are stamped too, in parallel: their folders' mtimes
    // are what lets partition() answer from memory. Without them every market-day of a books read
    // stat'ed two manifests, a thousand markets' cold coverage page thousands of calls.
    const [v2, v1] = await Promise.all([
      this.datesOf(family, primary),
      this.datesOf(family, stream),
      ...datasets.slice(1).map((d) => this.datesOf(family, d)),
    ]);
    return v1.length === 0 ? v2 : [...new Set([...v2, ...v1])].sort();
  }

  private async datesOf(family: Family, dataset: AnyDataset): Promise<string[]> {
    const base = join(parquetRoot(this.dataDir), `family=${family}`, `dataset=${dataset}`);
    // The folder's mtime changes whenever a date folder appears or is swapped: one stat, no listing.
    const mtimeMs = await stat(base).then(
      (st) => st.mtimeMs,
      () => -1,
    );
    if (mtimeMs < 0) return [];
    const hit = this.recentDates.get(base);
    if (hit && hit.mtimeMs === mtimeMs) return hit.dates;
    const out: string[] = [];
    for (const n of await readdirOrEmpty(base)) {
      const m = /^date=(\d{4}-\d{2}-\d{2})$/.exec(n);
      if (m) out.push(m[1]);
    }
    out.sort();
    this.recentDates.set(base, { mtimeMs, dates: out });
    return out;
  }

  /**
   * A market's records of one compacted day of a stream, or null when no published partition has
   * them. A complete v2 partition set wins; otherwise a v1 partition is served as it is.
   */
  async marketDay(family: Family, stream: Stream, day: string, market: string): Promise<MarketDay | null> {
    const datasets = datasetsOfStream(stream);
    // The stream's datasets are looked up together: each is a few file system calls that wait on
    // the thread pool, and one after the other they were a fifth of a cold read.
    const found = await Promise.all(
      datasets.map((d) =>
        this.partition(family, d, day).then(
          (p) => ({ p }),
          (e: unknown) => ({ e }),
        ),
      ),
    );
    const parts: OpenPartition[] = [];
    for (const f of found) {
      if ('e' in f) throw f.e; // as one after the other would have: only past the datasets it found
      if (!f.p || manifestVersion(f.p.manifest) < 2) break;
      parts.push(f.p);
    }
    if (parts.length === datasets.length) return this.v2MarketDay(family, parts, day, market);
    const p = await this.partition(family, stream, day);
    if (!p || manifestVersion(p.manifest) >= 2 || !p.markets.has(market) || p.manifest.files.length === 0) return null;
    const files = await p.files.market(market);
    const segments = files.segments;
    if (segments.length === 0) return null;
    const firstRow: number[] = [];
    let rows = 0;
    for (const s of segments) {
      firstRow.push(rows);
      rows += s.rows;
    }
    return { day, segments, firstRow, rows, group: (seg) => this.group(files.files.get(seg.file)!, seg.rg) };
  }

  /**
   * Both ends of a market's compacted day from the manifest alone (its record index), with what the
   * compaction read (`sources`: the log's bytes, its last seq; `quarantined`: records set aside,
   * which the index lacks): no part file is opened. Undefined when the day has no complete v2
   * partition set (read it instead); null when the set does not list the market.
   */
  async daySummary(family: Family, stream: Stream, day: string, market: string): Promise<DaySummary | null | undefined> {
    // The family-day's coverage summary when it is current (one small file for every market).
    const rows = (await this.coverageSummary(family, day))?.get(stream);
    if (rows) {
      const r = rows.get(market);
      return r
        ? { first: { seq: r[0], recv_ts: r[1] }, last: { seq: r[2], recv_ts: r[3] }, logBytes: r[4], logLastSeq: r[5], quarantined: r[6] }
        : null;
    }
    const datasets = datasetsOfStream(stream);
    const parts = await Promise.all(datasets.map((d) => this.partition(family, d, day)));
    if (parts.some((p) => !p || manifestVersion(p.manifest) < 2)) return undefined;
    const m = parts[0]!.manifest;
    const chunks = m.records?.[market];
    if (!chunks || chunks.length === 0) return null;
    const a = chunks[0];
    const b = chunks[chunks.length - 1];
    const quarantined = parts.reduce((n, p) => n + (p!.manifest.quarantine?.markets[market] ?? 0), 0);
    const src = m.sources[market];
    return {
      first: { seq: a[0], recv_ts: a[2] },
      last: { seq: b[1], recv_ts: b[3] },
      logBytes: src?.bytes ?? -1,
      logLastSeq: src?.last_seq ?? -1,
      quarantined,
    };
  }

  /**
   * One market's part files and segments in the published v2 partition of `dataset` for `day`, or
   * null when no such partition lists the market (that day is served from its log, if there is one).
   * A partition that lists the market without rows for it gives no segments.
   */
  async datasetFiles(family: Family, dataset: Dataset, day: string, market: string): Promise<MarketFiles | null> {
    const p = await this.partition(family, dataset, day);
    if (!p || manifestVersion(p.manifest) < 2 || !p.markets.has(market)) return null;
    return p.files.market(market);
  }

  /** A v2 market-day: the chunks of its record index, each rebuilt from the datasets' row groups. */
  private async v2MarketDay(family: Family, parts: OpenPartition[], day: string, market: string): Promise<MarketDay | null> {
    const chunks = parts[0].manifest.records?.[market];
    if (!chunks || chunks.length === 0) return null;
    const files = await Promise.all(parts.map((p) => p.files.market(market)));
    const id = parts.map((p) => `${p.dir}@${p.stamp}`).join('|');
    const segments: FileSegment[] = [];
    const firstRow: number[] = [];
    let rows = 0;
    chunks.forEach(([minSeq, maxSeq, minRecv, maxRecv, n], k) => {
      firstRow.push(rows);
      segments.push({ market, rg: k, file: -1, start: 0, rows: n, minSeq, maxSeq, minRecv, maxRecv });
      rows += n;
    });
    return { day, segments, firstRow, rows, group: (seg) => this.chunk(family, parts, files, id, seg) };
  }

  /** Rebuilds the records of one chunk from the row groups (of every dataset) that hold its seqs. */
  private async chunk(family: Family, parts: OpenPartition[], files: MarketFiles[], id: string, seg: FileSegment): Promise<DecodedGroup> {
    const key = `${id}#${seg.market}#${seg.rg}`;
    const hit = this.cache.get(key);
    if (hit) return hit as DecodedGroup;
    this.decodes++;
    let bytes = 0;
    // Each dataset's row groups are read at once (their reads wait on the thread pool while another
    // dataset's rows are decoded); the records are merged in seq order below.
    const perDataset = await Promise.all(
      files.map(async (f, d): Promise<RecordRow[]> => {
        const dataset = parts[d].dataset as Dataset;
        // The rows of one record may straddle two row groups: slices are joined before rebuilding.
        const slices: { cols: Columns; a: number; b: number }[] = [];
        for (const s of f.segments) {
          if (s.maxSeq < seg.minSeq || s.minSeq > seg.maxSeq) continue;
          const file = f.files.get(s.file)!;
          const g = await this.rawGroup(file, s.rg);
          // A market's rows in a row group are contiguous and in seq order: two binary searches.
          const a = lowerBound(g.seqWords, seg.minSeq, s.start, s.start + s.rows);
          const b = lowerBound(g.seqWords, seg.maxSeq + 1, a, s.start + s.rows);
          if (b > a) slices.push({ cols: decodeDataset(family, dataset, await file.reader.readRows(s.rg, a, b - a)), a: 0, b: b - a });
          bytes += (b - a) * 400;
        }
        if (slices.length === 0) return [];
        const one = slices.length === 1 ? slices[0] : joinSlices(slices);
        return recordsOf(family, dataset, one.cols, one.a, one.b);
      }),
    );
    const rows = perDataset.length === 1 ? perDataset[0] : perDataset.flat();
    if (files.length > 1) rows.sort((x, y) => x.seq - y.seq);
    const out = DecodedGroup.of(rows, bytes + rows.length * 64);
    this.cache.set(key, out);
    return out;
  }

  private async rawGroup(f: OpenFile, rg: number): Promise<RawGroup> {
    const key = `${f.id}#${rg}`;
    const hit = this.cache.get(key);
    if (hit) return hit as RawGroup;
    const table = await f.reader.readRowGroup(rg, ['seq']);
    const chunks = table.getChild('seq')!.data;
    let seqWords: Uint32Array;
    if (chunks.length === 1) seqWords = int64Words(chunks[0]);
    else {
      seqWords = new Uint32Array(table.numRows * 2);
      let at = 0;
      for (const d of chunks) {
        seqWords.set(int64Words(d), at);
        at += d.length * 2;
      }
    }
    const g: RawGroup = { seqWords, bytes: seqWords.byteLength };
    this.cache.set(key, g);
    return g;
  }

  /**
   * The family-day's coverage summary (coverage-summary.ts), checked against its manifests when
   * loaded and held while the record datasets' folders keep their mtimes (as `partition` holds a
   * partition): a publication or rebuild renames a date folder, which makes it load again.
   */
  private coverageSummary(family: Family, day: string): Promise<CoverageSummary | null> {
    let bases = this.summaryBases.get(family);
    if (bases === undefined) {
      const base = join(parquetRoot(this.dataDir), `family=${family}`);
      this.summaryBases.set(family, (bases = SUMMARY_DATASETS.map((d) => join(base, `dataset=${d}`))));
    }
    const mtimes = bases.map((b) => this.recentDates.get(b)?.mtimeMs ?? -1);
    const key = mtimes.join(',');
    const id = `${family}|${day}`;
    const hit = this.summaries.get(id);
    // A folder never stamped (-1) vouches for nothing: checked again, unless the summary's streams
    // that it holds rows of are all stamped.
    const now = Date.now();
    if (hit && hit.key === key && hit.streams !== undefined && hit.streams.every((k) => mtimes[k] >= 0)) {
      // The file itself is looked at again once a second (a rewrite or damage since it was loaded).
      if (now - hit.checkedAt < 1000) return hit.p;
      hit.checkedAt = now;
      if (summaryFileStamp(this.dataDir, family, day) === hit.file) return hit.p;
    }
    const entry: SummaryEntry = { key, p: null as never, checkedAt: now, file: summaryFileStamp(this.dataDir, family, day) };
    entry.p = readCoverageSummary(this.dataDir, family, day).then(
      (v) => {
        entry.streams = v ? SUMMARY_DATASETS.flatMap((d, k) => (v.has(streamOfDataset(d)) ? [k] : [])) : [];
        return v;
      },
      () => null,
    );
    this.summaries.set(id, entry);
    return entry.p;
  }

  /** The published partition (manifest present, file as listed), reopened when it was replaced. */
  private async partition(family: Family, dataset: AnyDataset, day: string): Promise<OpenPartition | null> {
    const dir = partitionDir(this.dataDir, family, dataset, day);
    // Publishing or rebuilding a partition renames its folder, which changes the parent's mtime.
    const parentMtimeMs = this.recentDates.get(join(parquetRoot(this.dataDir), `family=${family}`, `dataset=${dataset}`))?.mtimeMs ?? -1;
    const recent = this.recentParts.get(dir);
    if (recent && parentMtimeMs >= 0 && recent.parentMtimeMs === parentMtimeMs) return recent.p;
    let stamp: string;
    try {
      const s = await stat(join(dir, MANIFEST));
      stamp = `${s.mtimeMs}:${s.size}:${s.ino}`;
    } catch {
      return null; // not published (yet): the log is the truth
    }
    const cached = this.open.get(dir);
    if (cached) {
      const p = await cached.catch(() => null);
      if (p && p.stamp === stamp) {
        this.recentParts.set(dir, { parentMtimeMs, p });
        return p;
      }
    }
    // Replaced or not loaded yet. An old reader is not freed here: a read may still be using it,
    // and replacing a partition (a rerun over changed logs) is rare.
    const loading = this.load(dataset, dir, stamp);
    this.open.set(dir, loading);
    loading.then(
      (p) => p && this.recentParts.set(dir, { parentMtimeMs, p }),
      () => this.open.delete(dir),
    );
    return loading;
  }

  private async load(dataset: AnyDataset, dir: string, stamp: string): Promise<OpenPartition | null> {
    const manifest = await readManifest(dir);
    if (!manifest) return null;
    return { dataset, stamp, dir, manifest, markets: new Set(Object.keys(manifest.sources)), files: new PartitionFiles(dir, manifest) };
  }

  private async group(f: OpenFile, rg: number): Promise<DecodedGroup> {
    const key = `${f.id}#${rg}`;
    const hit = this.cache.get(key);
    if (hit) return hit as DecodedGroup;
    this.decodes++;
    const t = await f.reader.readRowGroup(rg, ['seq', 'receive_time', 'checkpoint', 'record']);
    const n = t.numRows;
    const seqs = new Float64Array(n);
    const recvUs = new Float64Array(n);
    const checkpoints = new Uint8Array(n);
    const texts = new Array<string>(n);
    const seqCol = t.getChild('seq')!;
    const recvCol = t.getChild('receive_time')!;
    const cpCol = t.getChild('checkpoint')!;
    const recCol = t.getChild('record')!;
    let bytes = 64 * n;
    // Read the raw µs values (exact) rather than Arrow's millisecond conversion.
    let i = 0;
    for (const d of recvCol.data) for (let k = 0; k < d.length; k++) recvUs[i++] = Number((d.values as BigInt64Array)[d.offset + k]);
    for (let k = 0; k < n; k++) {
      seqs[k] = Number(seqCol.get(k));
      checkpoints[k] = cpCol.get(k) ? 1 : 0;
      texts[k] = recCol.get(k) as string;
      bytes += texts[k].length * 4; // the text plus its parsed object, roughly
    }
    const g = new DecodedGroup(seqs, recvUs, checkpoints, texts, bytes);
    this.cache.set(key, g);
    return g;
  }

  /** Bytes of decoded row groups held (for metrics and tests). */
  get cachedBytes(): number {
    return this.cache.calculatedSize ?? 0;
  }

  close(): void {
    this.cache.clear();
    this.recentDates.clear();
    this.recentParts.clear();
    for (const p of this.open.values())
      void p.then(
        (x) => x?.files.close(),
        () => undefined,
      );
    this.open.clear();
  }
}

const stores = new Map<string, ParquetStore>();

/** The process-wide store of a data dir (so every reader shares one decode cache). */
export function parquetStore(dataDir: string): ParquetStore {
  let s = stores.get(dataDir);
  if (!s) stores.set(dataDir, (s = new ParquetStore(dataDir)));
  return s;
}
