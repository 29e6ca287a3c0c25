// Datasets derived from a stream's compacted records rather than holding them (`book_snapshots`):
// built after the record datasets of the day are published, market by market from the composite
// view the read side uses (the day's records, and the checkpoint before 00:00 that makes the books
// whole), and published the same way. A derived partition is current when its manifest names the
// same sources as the stream's primary partition and its files match their checksums; so a tree
// compacted before the dataset existed gets it on the next `compact`, from its logs or its Parquet.

import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Family } from '../../schema/observation.js';
import { openLogReader } from '../read/reader.js';
import { compositeReader } from '../read/composite-reader.js';
import { bookSnapshotRows } from '../parquet/book-snapshots.js';
import { isDiskError, quarantined, type CompactOptions, type PartitionResult } from './input.js';
import { manifestVersion, partitionDir, readManifest, type Manifest } from '../parquet/manifest.js';
import { PartitionBuilder, currentPartNames, settleLeftovers } from '../parquet/publish.js';
import { SCHEMA_VERSION, datasetsOfStream, derivedOfStream, type Dataset, type Stream } from '../parquet/datasets.js';
import { contextOf } from './stream.js';
import { candleRows } from '../candles/candles.js';
import { DecimalError } from '../parquet/decimal.js';
import { marketRow } from './markets-dataset.js';

async function current(dir: string, primary: Manifest): Promise<Manifest | null> {
  const m = await readManifest(dir);
  if (!m || manifestVersion(m) < SCHEMA_VERSION) return null;
  if (JSON.stringify(sortedKeys(m.sources)) !== JSON.stringify(sortedKeys(primary.sources))) return null;
  // Older names (first part unnumbered) or no file on a day without rows: rebuilt (from logs or Parquet).
  if (m.files.length === 0 || !currentPartNames(m.dataset, m.date, m.files)) return null;
  for (const f of m.files) {
    const bytes = await readFile(join(dir, f.file)).catch(() => null);
    if (!bytes || bytes.length !== f.bytes || createHash('sha256').update(bytes).digest('hex') !== f.sha256) return null;
  }
  return m;
}

const sortedKeys = <T>(o: Record<string, T>): [string, T][] => Object.entries(o).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));

/** Builds (or keeps) every derived dataset of the stream's day; nothing when its records are not compacted. */
export async function buildDerived(
  dataDir: string,
  family: Family,
  stream: Stream,
  day: string,
  opts: CompactOptions,
  only?: readonly Dataset[],
): Promise<PartitionResult[]> {
  const out: PartitionResult[] = [];
  const derived = only ?? derivedOfStream(stream);
  if (derived.length === 0) return out;
  const primary = await readManifest(partitionDir(dataDir, family, datasetsOfStream(stream)[0], day));
  if (!primary || manifestVersion(primary) < SCHEMA_VERSION) return out;
  for (const dataset of derived) {
    const dir = partitionDir(dataDir, family, dataset, day);
    if (!opts.dryRun) await settleLeftovers(dataDir, family, dataset, day);
    const have = await current(dir, primary);
    if (have) {
      out.push({
        family,
        dataset,
        date: day,
        status: 'unchanged',
        rows: have.files.reduce((a, f) => a + f.rows, 0),
        bytes: have.files.reduce((a, f) => a + f.bytes, 0),
        ...quarantined(have.quarantine?.records ?? 0),
      });
      continue;
    }
    if (opts.dryRun) {
      out.push({ family, dataset, date: day, status: 'would-write', rows: 0, bytes: 0 });
      continue;
    }
    // One derived dataset's failure is its own: `markets` reads the books too, and a books log that
    // cannot be read must not fail the catalogue (or the candles the snapshots). A full disk stops the run.
    try {
      out.push(await build(dataDir, family, stream, dataset, day, primary, opts));
    } catch (e) {
      if (isDiskError(e)) throw e;
      out.push({ family, dataset, date: day, status: 'failed', rows: 0, bytes: 0, error: (e as Error)?.message ?? String(e) });
    }
  }
  return out;
}

/** One market's rows of the derived dataset (`book_snapshots`, `candles`), into `b` (a part file is written once enough gathered). */
export async function addMarket(
  dataDir: string,
  family: Family,
  stream: Stream,
  day: string,
  market: string,
  b: PartitionBuilder,
): Promise<void> {
  const key = { family, stream, market };
  const view = await compositeReader(dataDir, key, openLogReader(dataDir, key)).view();
  const { outcomes } = await contextOf(dataDir, family, market);
  if (b.dataset === 'markets') {
    await marketRow(dataDir, family, market, b.sink);
    return b.added();
  }
  if (b.dataset === 'candles') {
    // A value the DECIMAL columns cannot hold (its record is set aside by the record datasets): no candles for the market.
    try {
      await candleRows(view, { family, market, day, outcomes }, b.sink);
    } catch (e) {
      if (!(e instanceof DecimalError)) throw e;
      await b.quarantine(market, undefined, 1);
    }
    return b.added();
  }
  const { setAside } = await bookSnapshotRows(view, { family, market, day, outcomes }, b.sink);
  if (setAside > 0) await b.quarantine(market, undefined, setAside);
  await b.added();
}

async function build(
  dataDir: string,
  family: Family,
  stream: Stream,
  dataset: Dataset,
  day: string,
  primary: Manifest,
  opts: CompactOptions,
): Promise<PartitionResult> {
  const b = new PartitionBuilder(dataDir, family, dataset, day, opts.onStep, opts.fileRows);
  await b.start();
  try {
    // `markets`: every market recorded on the day, by its catalogue or by its books.
    const books = dataset === 'markets' ? await readManifest(partitionDir(dataDir, family, datasetsOfStream('books')[0], day)) : null;
    const markets = [...new Set([...Object.keys(primary.sources), ...Object.keys(books?.sources ?? {})])].sort();
    for (const market of markets) await addMarket(dataDir, family, stream, day, market, b);
    await b.publish(primary.sources);
  } catch (e) {
    await b.abandon().catch(() => undefined);
    throw e;
  }
  return {
    family,
    dataset,
    date: day,
    status: b.total > 0 ? 'written' : 'empty',
    rows: b.total,
    bytes: b.bytes,
    ...quarantined(b.setAside),
  };
}
