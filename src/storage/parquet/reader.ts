// Serving stored records back out of compacted partitions. A partition's footer carries a sparse
// index (one segment per market per row group, with time and seq ranges), so a query decodes only
// the row groups it needs; decoded groups live in one LRU bounded by bytes, shared by all readers.

import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { LRUCache } from 'lru-cache';
import type { Family, Recorded } from '../../schema/observation.js';
import { MANIFEST, partitionDir, readManifest, readdirOrEmpty, parquetRoot, type Manifest, type Segment } from './manifest.js';
import type { ParquetFileReader } from './file.js';
import type { Dataset } from './schema.js';

/** One decoded row group: the columns the reader needs, records parsed on first use. */
export class DecodedGroup {
  private readonly parsed: (Recorded | undefined)[];
  constructor(
    readonly seqs: Float64Array,
    readonly recvUs: Float64Array,
    readonly checkpoints: Uint8Array,
    private readonly texts: string[],
    readonly bytes: number,
  ) {
    this.parsed = new Array(texts.length);
  }

  record(i: number): Recorded {
    return (this.parsed[i] ??= JSON.parse(this.texts[i]) as Recorded);
  }
}

/** The rows of one market in one compacted day: its segments, decoded on demand. */
export interface MarketDay {
  readonly day: string;
  readonly segments: readonly FileSegment[];
  /** Rows before each segment (row index of the market's day = position offset). */
  readonly firstRow: readonly number[];
  readonly rows: number;
  group(seg: FileSegment): Promise<DecodedGroup>;
}

/** A segment of one part file of a partition. */
export interface FileSegment extends Segment {
  readonly file: number;
}

/** A published partition: its manifest at once, its files only when a market in it is read. */
interface OpenPartition {
  readonly stamp: string;
  readonly dir: string;
  readonly manifest: Manifest;
  /** Markets whose logs went into it (from the manifest): others never open the files. */
  readonly markets: ReadonlySet<string>;
  files: Promise<OpenFiles> | null;
}

interface OpenFiles {
  readonly readers: ParquetFileReader[];
  /** Cache-key prefix per file: path and sha256, so a replaced file never hits old groups. */
  readonly ids: string[];
  readonly byMarket: Map<string, FileSegment[]>;
}

/** Decoded row groups, bounded by bytes; shared by every reader of the process. */
const DEFAULT_CACHE_BYTES = 256 * 1024 * 1024;

export class ParquetStore {
  private readonly cache: LRUCache<string, DecodedGroup>;
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

  constructor(readonly dataDir: string, maxBytes = DEFAULT_CACHE_BYTES) {
    this.cache = new LRUCache<string, DecodedGroup>({ maxSize: maxBytes, sizeCalculation: (g) => Math.max(1, g.bytes) });
  }

  /** Dates that have a partition folder for (family, dataset), ascending. */
  async dates(family: Family, dataset: Dataset): Promise<string[]> {
    const base = join(parquetRoot(this.dataDir), `family=${family}`, `dataset=${dataset}`);
    // The folder's mtime changes whenever a date folder appears or is swapped: one stat, no listing.
    const mtimeMs = await stat(base).then((st) => st.mtimeMs, () => -1);
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

  /** A market's rows of one compacted day, or null when the published partition has none. */
  async marketDay(family: Family, dataset: Dataset, day: string, market: string): Promise<MarketDay | null> {
    const p = await this.partition(family, dataset, day);
    if (!p || !p.markets.has(market)) return null;
    p.files ??= this.openFiles(p);
    const files = await p.files.catch((e: unknown) => {
      p.files = null; // retried on the next read
      throw e;
    });
    const segments = files.byMarket.get(market);
    if (!segments || segments.length === 0) return null;
    const firstRow: number[] = [];
    let rows = 0;
    for (const s of segments) {
      firstRow.push(rows);
      rows += s.rows;
    }
    return { day, segments, firstRow, rows, group: (seg) => this.group(files, seg.file, seg.rg) };
  }

  /** The published partition (manifest present, file as listed), reopened when it was replaced. */
  private async partition(family: Family, dataset: Dataset, day: string): Promise<OpenPartition | null> {
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
    const loading = this.load(dir, stamp);
    this.open.set(dir, loading);
    loading.then((p) => p && this.recentParts.set(dir, { parentMtimeMs, p }), () => this.open.delete(dir));
    return loading;
  }

  private async load(dir: string, stamp: string): Promise<OpenPartition | null> {
    const manifest = await readManifest(dir);
    if (!manifest || manifest.files.length === 0) return null;
    return { stamp, dir, manifest, markets: new Set(Object.keys(manifest.sources)), files: null };
  }

  private async openFiles(p: OpenPartition): Promise<OpenFiles> {
    // Loaded on first use: processes that never meet a compacted day never load the wasm module.
    const { ParquetFileReader } = await import('./file.js');
    const readers: ParquetFileReader[] = [];
    const ids: string[] = [];
    const byMarket = new Map<string, FileSegment[]>();
    for (const [i, f] of p.manifest.files.entries()) {
      const path = join(p.dir, f.file);
      const reader = await ParquetFileReader.open(path);
      readers.push(reader);
      ids.push(`${path}@${f.sha256}`);
      for (const s of JSON.parse(reader.footer.metadata.get('pmtape.segments') ?? '[]') as Segment[]) {
        let list = byMarket.get(s.market);
        if (!list) byMarket.set(s.market, (list = []));
        list.push({ ...s, file: i });
      }
    }
    // Files hold whole markets in seq order, but keep segments ordered by seq whatever the layout.
    for (const list of byMarket.values()) list.sort((a, b) => a.minSeq - b.minSeq);
    return { readers, ids, byMarket };
  }

  private async group(p: OpenFiles, file: number, rg: number): Promise<DecodedGroup> {
    const key = `${p.ids[file]}#${rg}`;
    const hit = this.cache.get(key);
    if (hit) return hit;
    this.decodes++;
    const t = await p.readers[file].readRowGroup(rg, ['seq', 'receive_time', 'checkpoint', 'record']);
    const n = t.numRows;
    const seqs = new Float64Array(n);
    const recvUs = new Float64Array(n);
    const checkpoints = new Uint8Array(n);
    const texts: string[] = new Array(n);
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
    for (const p of this.open.values()) void p.then((x) => x?.files?.then((f) => f.readers.forEach((r) => r.close()), () => undefined), () => undefined);
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
