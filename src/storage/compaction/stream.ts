// Building the v2 partitions of one (family, stream, day): every market's records — from its log
// while that exists, else from the schema-version-1 partition (its `record` column), which is how a
// v1 tree migrates after retention deleted the logs — become rows of each dataset the stream feeds,
// plus a record index (seq and time ranges per chunk of records) the read side seeks with.

import { rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { Family, Recorded } from '../../schema/observation.js';
import { openLogReader } from '../read/reader.js';
import { compositeReader } from '../read/composite-reader.js';
import type { LogKey } from '../types.js';
import { quarantined, readLogDay, rowsOrRefusal, type CompactOptions, type PartitionResult } from './input.js';
import { manifestVersion, partitionDir, readManifest, stagingRoot, type Manifest, type RecordChunk } from '../parquet/manifest.js';
import { PartitionBuilder } from '../parquet/publish.js';
import { BOOK_CHANGE_TYPES, type RowContext, type SourceRecord } from '../parquet/rows.js';
import { datasetsOfStream, type Stream } from '../parquet/datasets.js';

/** A chunk of the record index closes after this many records or book_changes rows. */
export const CHUNK_RECORDS = 1024;
export const CHUNK_ROWS = 8192;

export interface LegacyPartition {
  readonly dir: string;
  readonly manifest: Manifest;
  readonly version: number;
}

/** The schema-version-1 partition of a stream's day, if there is one. */
export async function legacyPartition(dataDir: string, family: Family, stream: Stream, day: string): Promise<LegacyPartition | null> {
  const dir = partitionDir(dataDir, family, stream, day); // v1 named its datasets after the streams
  const m = await readManifest(dir);
  if (!m) return null;
  const version = manifestVersion(m);
  return version >= 2 ? null : { dir, manifest: m, version };
}

/** The stored records of the markets `want` from a v1 partition (its lossless `record` column). */
async function legacyRecords(p: LegacyPartition, want: ReadonlySet<string>): Promise<Map<string, SourceRecord[]>> {
  const out = new Map<string, SourceRecord[]>();
  if (want.size === 0) return out;
  const { ParquetFileReader } = await import('../parquet/file.js');
  for (const f of p.manifest.files) {
    const r = await ParquetFileReader.open(join(p.dir, f.file));
    try {
      const t = await r.readAll(['market_id', 'checkpoint', 'record']);
      const ms = t.getChild('market_id')!;
      const cps = t.getChild('checkpoint')!;
      const recs = t.getChild('record')!;
      for (let i = 0; i < t.numRows; i++) {
        const m = ms.get(i) as string;
        if (!want.has(m)) continue;
        let list = out.get(m);
        if (!list) out.set(m, (list = []));
        list.push({ rec: JSON.parse(recs.get(i) as string) as Recorded, checkpoint: cps.get(i) === true });
      }
    } finally {
      r.close();
    }
  }
  for (const list of out.values()) list.sort((a, b) => a.rec.seq - b.rec.seq);
  return out;
}

/** Token id → outcome label from the market's latest catalogue entry (empty when it has no outcome tokens). */
export async function contextOf(dataDir: string, family: Family, market: string): Promise<RowContext> {
  const outcomes = new Map<string, string>();
  const key = { family, stream: 'catalog', market } as const;
  // The composite reader (logs and compacted days), built here rather than through storage/index.ts,
  // which loads compaction lazily: importing the door from compaction would close a circle.
  const latest = await compositeReader(dataDir, key, openLogReader(dataDir, key)).latest();
  const m = latest?.rec.type === 'catalog' ? latest.rec.market : null;
  for (const o of m && 'outcomes' in m ? m.outcomes : []) outcomes.set(o.token_id, o.label);
  return { outcomes };
}

/**
 * Chunks of the record index of one market, built as its records go by: [minSeq, maxSeq,
 * minRecvMs, maxRecvMs, records], each at most CHUNK_RECORDS records and about CHUNK_ROWS rows.
 */
class ChunkIndex {
  readonly chunks: RecordChunk[] = [];
  private cur: RecordChunk | null = null;
  private rows = 0;

  /** A record with `n` rows in the stream's primary dataset (1 when it has none there). */
  add(seq: number, recvMs: number, n: number): void {
    let cur = this.cur;
    if (cur && (cur[4] >= CHUNK_RECORDS || this.rows + n > CHUNK_ROWS)) {
      this.chunks.push(cur);
      cur = null;
    }
    if (!cur) {
      cur = this.cur = [seq, seq, recvMs, recvMs, 0];
      this.rows = 0;
    }
    cur[1] = seq;
    cur[2] = Math.min(cur[2], recvMs);
    cur[3] = Math.max(cur[3], recvMs);
    cur[4]++;
    this.rows += n;
  }

  done(): RecordChunk[] {
    if (this.cur) this.chunks.push(this.cur);
    this.cur = null;
    return this.chunks;
  }
}

function belongs(stream: Stream, type: string): boolean {
  if (stream === 'metrics') return type === 'metric';
  if (stream === 'catalog') return type === 'catalog';
  return BOOK_CHANGE_TYPES.has(type) || type === 'trade' || type === 'gap';
}

/**
 * Writes every dataset of the stream for the day and publishes them; a v1 `books` partition the
 * new ones replace is retired last (metrics and catalog keep their folder, swapped in place).
 */
export async function buildStream(
  dataDir: string,
  family: Family,
  stream: Stream,
  day: string,
  sources: Record<string, number>,
  legacy: LegacyPartition | null,
  opts: CompactOptions,
): Promise<PartitionResult[]> {
  const datasets = datasetsOfStream(stream);
  const builders = datasets.map((d) => new PartitionBuilder(dataDir, family, d, day, opts.onStep, opts.fileRows));
  const sinks = builders.map((b) => b.sink);
  const markets = new Set([...Object.keys(sources), ...Object.keys(legacy?.manifest.sources ?? {})]);
  const fromLegacy = legacy
    ? await legacyRecords(legacy, new Set([...markets].filter((m) => sources[m] === undefined)))
    : new Map<string, SourceRecord[]>();
  const sourceInfo: Record<string, { bytes: number; last_seq: number }> = {};
  const index: Record<string, RecordChunk[]> = {};
  const dryRows = datasets.map(() => 0);
  if (!opts.dryRun) for (const b of builders) await b.start();
  try {
    for (const market of [...markets].sort()) {
      const key: LogKey = { family, stream, market };
      const fromLog = sources[market] !== undefined;
      const ctx = await contextOf(dataDir, family, market);
      const chunks = new ChunkIndex();
      const starts = builders.map((b) => b.sink.length);
      let lastSeq = 0;
      let primaryBefore = sinks[0].length;
      // Record by record, into every dataset of the stream: a day's records are never all held (a
      // day of deep books held whole was most of compaction's garbage-collection time).
      for await (const sr of fromLog ? readLogDay(dataDir, key, day) : (fromLegacy.get(market) ?? [])) {
        const { rec } = sr;
        lastSeq = rec.seq;
        const refused = belongs(stream, rec.type)
          ? rowsOrRefusal(family, datasets, sinks, market, sr, ctx)
          : { dataset: 0, reason: `market ${market} seq ${rec.seq}: a ${rec.type} record in the ${stream} stream has no dataset` };
        if (refused) {
          // Set aside whole, in the partition of the dataset that refused it; the day goes on.
          const line = JSON.stringify({ market, seq: rec.seq, checkpoint: sr.checkpoint, reason: refused.reason, record: rec });
          if (opts.dryRun) builders[refused.dataset].setAsideBy[market] = (builders[refused.dataset].setAsideBy[market] ?? 0) + 1;
          else await builders[refused.dataset].quarantine(market, line);
          continue;
        }
        const primaryRows = sinks[0].length - primaryBefore;
        primaryBefore = sinks[0].length;
        chunks.add(rec.seq, rec.recv_ts, stream === 'books' && primaryRows > 0 ? primaryRows : 1);
      }
      sourceInfo[market] = fromLog ? { bytes: sources[market], last_seq: lastSeq } : legacy!.manifest.sources[market];
      for (const [i, b] of builders.entries()) {
        if (opts.dryRun) {
          dryRows[i] += b.sink.length - starts[i];
          b.sink.clear();
        } else await b.added();
      }
      const marketChunks = chunks.done();
      if (marketChunks.length) index[market] = marketChunks;
    }
    const out: PartitionResult[] = [];
    for (const [i, b] of builders.entries()) {
      if (opts.dryRun) {
        out.push({ family, dataset: b.dataset, date: day, status: 'would-write', rows: dryRows[i], bytes: 0, ...quarantined(b.setAside) });
        continue;
      }
      await b.publish(sourceInfo, i === 0 ? index : undefined);
      out.push({
        family,
        dataset: b.dataset,
        date: day,
        status: b.total > 0 ? 'written' : 'empty',
        rows: b.total,
        bytes: b.bytes,
        ...quarantined(b.setAside),
      });
    }
    if (!opts.dryRun && legacy && stream === 'books') await retireLegacy(dataDir, legacy.dir, `${family}.books.${day}`);
    return out;
  } catch (e) {
    for (const b of builders) await b.abandon().catch(() => undefined);
    throw e;
  }
}

/** Moves a migrated v1 folder out of `parquet/` in one rename, then deletes it. */
async function retireLegacy(dataDir: string, dir: string, name: string): Promise<void> {
  if (
    !(await stat(dir).then(
      () => true,
      () => false,
    ))
  )
    return;
  const gone = join(stagingRoot(dataDir), `v1.${name}`);
  await rm(gone, { recursive: true, force: true });
  await rename(dir, gone);
  await rm(gone, { recursive: true, force: true });
}
