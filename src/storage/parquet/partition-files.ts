// The part files of one published partition, opened only when a market in them is read. A manifest
// lists the markets of each file (`markets`, written since schema version 2's second round), so a
// read of one market opens only the files that hold it: on a day of many markets that is one footer
// instead of all of them. Manifests without the list open every file, as before.

import { join } from 'node:path';
import type { Manifest, Segment } from './manifest.js';
import type { ParquetFileReader } from './file.js';

/** A segment of one part file of a partition (`file`: its index in the manifest's list). */
export interface FileSegment extends Segment {
  readonly file: number;
}

export interface OpenFile {
  readonly reader: ParquetFileReader;
  /** The file's path (another thread opens it by this name: tardis/decoders.ts). */
  readonly path: string;
  /** Cache-key prefix: path and sha256, so a replaced file never hits old decoded groups. */
  readonly id: string;
  /** This file's segments by market (the footer's sparse index). */
  readonly segments: ReadonlyMap<string, readonly FileSegment[]>;
}

/** What one market needs of a partition: its files, and its segments across them in seq order. */
export interface MarketFiles {
  readonly files: ReadonlyMap<number, OpenFile>;
  readonly segments: readonly FileSegment[];
}

/** Part files opened so far by every partition of the process (tests check reads stay narrow). */
export const partFileOpens = { count: 0 };

export class PartitionFiles {
  private readonly opened: (Promise<OpenFile> | null)[];
  private readonly byMarket = new Map<string, Promise<MarketFiles>>();
  /** Markets of each file, or null when the manifest does not say (every file is opened). */
  private readonly fileMarkets: (ReadonlySet<string> | null)[];

  constructor(
    private readonly dir: string,
    private readonly manifest: Manifest,
  ) {
    this.opened = manifest.files.map(() => null);
    this.fileMarkets = manifest.files.map((f) => (f.markets ? new Set(f.markets) : null));
  }

  /** The market's files and segments; a failed open is retried by the next call. */
  market(market: string): Promise<MarketFiles> {
    let p = this.byMarket.get(market);
    if (!p) {
      p = this.load(market);
      this.byMarket.set(market, p);
      p.catch(() => this.byMarket.delete(market));
    }
    return p;
  }

  private async load(market: string): Promise<MarketFiles> {
    const files = new Map<number, OpenFile>();
    const segments: FileSegment[] = [];
    const wanted: number[] = [];
    for (let i = 0; i < this.manifest.files.length; i++) if (!this.fileMarkets[i] || this.fileMarkets[i]!.has(market)) wanted.push(i);
    const opened = await Promise.all(wanted.map((i) => this.file(i))); // opened together: each waits on the thread pool
    for (const [k, f] of opened.entries()) {
      const i = wanted[k];
      const mine = f.segments.get(market);
      if (!mine) continue;
      files.set(i, f);
      segments.push(...mine);
    }
    // Files hold whole markets in seq order, but keep segments ordered by seq whatever the layout.
    segments.sort((a, b) => a.minSeq - b.minSeq);
    return { files, segments };
  }

  private file(i: number): Promise<OpenFile> {
    let p = this.opened[i];
    if (!p) {
      p = this.open(i);
      this.opened[i] = p;
      p.catch(() => void (this.opened[i] = null));
    }
    return p;
  }

  private async open(i: number): Promise<OpenFile> {
    // Loaded on first use: processes that never meet a compacted day never load the wasm module.
    const { ParquetFileReader } = await import('./file.js');
    const f = this.manifest.files[i];
    const path = join(this.dir, f.file);
    const reader = await ParquetFileReader.open(path);
    partFileOpens.count++;
    const segments = new Map<string, FileSegment[]>();
    for (const s of JSON.parse(reader.footer.metadata.get('pmtape.segments') ?? '[]') as Segment[]) {
      let list = segments.get(s.market);
      if (!list) segments.set(s.market, (list = []));
      list.push({ ...s, file: i });
    }
    return { reader, path, id: `${path}@${f.sha256}`, segments };
  }

  /** Frees the open files (their wasm memory and descriptors). */
  close(): void {
    for (const p of this.opened)
      void p?.then(
        (f) => f.reader.close(),
        () => undefined,
      );
  }
}
