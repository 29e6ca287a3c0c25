// Engines reading the archive straight from the bucket (a real SeaweedFS holding a compacted sim
// day published by `archive sync`), each run as a child process the way docs/archive.md shows:
// DuckDB (httpfs, the docs' query verbatim), pyarrow (S3FileSystem + dataset, hive partitioning) and polars (scan_parquet on s3://) count the
// same rows and read the same values as from the local Parquet; Spark (s3a:// with hadoop-aws)
// reads a day of book_changes and rebuilds a book equal to the API's as-of book, level for level.

import t from 'tap';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { Test } from 'tap';
import { requireTool } from '../../helpers/toolchains.js';
import { sparkJars } from '../../../tools/toolchains/spark.js';
import { dayStartMs } from '../../../src/schema/time.js';
import { listPartitions, readManifest } from '../../../src/storage/parquet/manifest.js';
import { getJson, REPO, runCli, runCliOnce } from '../../selfhost/helpers.js';
import { startWeed, ACCESS_KEY, SECRET_KEY } from './weed.js';
import { DAY, archiveCli, compactedDay } from './common.js';

const weedBin = requireTool(t, 'seaweedfs');
const python = requireTool(t, 'spark');
const SCRIPT = join(REPO, 'test', 'storage', 'archive', 'engines_read.py');
const BUCKET = 'pmtape-engines';
const PREFIX = 'tape';

/** Starts weed, publishes a compacted fixture day; returns the data dir and the endpoint. */
async function publishedDay(t: Test, bin: string): Promise<{ dataDir: string; endpoint: string }> {
  const weed = await startWeed(t, bin);
  await weed.createBucket(BUCKET);
  const dataDir = await compactedDay(t);
  const sync = await archiveCli(['sync'], dataDir, weed.endpoint, `s3://${BUCKET}/${PREFIX}`);
  t.equal(sync.code, 0, sync.stderr);
  return { dataDir, endpoint: weed.endpoint };
}

async function engine(py: string, args: string[]): Promise<any> {
  const env = { ...process.env, AWS_ACCESS_KEY_ID: ACCESS_KEY, AWS_SECRET_ACCESS_KEY: SECRET_KEY, AWS_EC2_METADATA_DISABLED: 'true', PYSPARK_PYTHON: py };
  try {
    const { stdout } = await promisify(execFile)(py, [SCRIPT, ...args], { env, maxBuffer: 64e6, timeout: 600_000 });
    return JSON.parse(stdout.trim().split('\n').at(-1)!);
  } catch (e) {
    const x = e as { stderr?: string; stdout?: string; message: string };
    throw new Error(`${args[0]} failed: ${x.message}\n${(x.stderr ?? '').slice(-4000)}`);
  }
}

if (weedBin && python) {
  t.test('pyarrow and polars read the bucket: same rows and values as the local Parquet', async (t) => {
    const { dataDir, endpoint } = await publishedDay(t, weedBin);
    const rows = new Map<string, number>();
    for (const p of await listPartitions(dataDir)) {
      const m = await readManifest(p.dir);
      if (m && m.files.length > 0) rows.set(`family=${p.family}/dataset=${p.dataset}`, m.files.reduce((n, f) => n + f.rows, 0));
    }
    const datasets = [...rows.keys()].filter((k) => rows.get(k)! > 0);
    t.ok(datasets.length >= 8, `${datasets.length} non-empty datasets`);
    for (const name of ['pyarrow', 'polars']) {
      const out = await engine(python, [name, endpoint, BUCKET, PREFIX, join(dataDir, 'parquet'), JSON.stringify(datasets)]);
      for (const ds of datasets) {
        t.equal(out[ds].bucket.rows, rows.get(ds), `${name} ${ds}: the manifest's row count from the bucket`);
        t.same(out[ds].bucket, out[ds].local, `${name} ${ds}: the same values as the local files`);
        t.same(out[ds].bucket.dates, [DAY], `${name} ${ds}: the hive date column`);
      }
    }
  });

  t.test('DuckDB httpfs: the docs query on the bucket answers as on the local files', async (t) => {
    const { dataDir, endpoint } = await publishedDay(t, weedBin);
    const page = readFileSync(join(REPO, 'docs', 'datasets.md'), 'utf8');
    const m = /<!-- query:archive-duckdb -->\s*```sql\n([\s\S]*?)```/.exec(page);
    t.ok(m, 'docs/datasets.md has the archive-duckdb query');
    if (!m) return;
    const sql = m[1]
      .replace("'127.0.0.1:8333'", `'${new URL(endpoint).host}'`)
      .replace("'YOUR_KEY_ID'", `'${ACCESS_KEY}'`).replace("'YOUR_SECRET'", `'${SECRET_KEY}'`)
      .replaceAll('s3://my-archive/pmtape/', `s3://${BUCKET}/${PREFIX}/`);
    t.not(sql, m[1], 'the placeholders were replaced');
    const local = sql.replaceAll(`s3://${BUCKET}/${PREFIX}/parquet/`, `${join(dataDir, 'parquet')}/`);
    const out = await engine(python, ['duckdb', sql, local]);
    t.ok(out.bucket.length >= 2, `${out.bucket.length} rows (date, market) from the bucket`);
    t.same(out.bucket, out.local, 'the same rows as from the local files');
    t.ok(out.bucket.every((r: { date: string }) => r.date === DAY), 'the hive date column');
  });

  t.test('Spark s3a:// rebuilds a book from book_changes equal to the API as-of book', async (t) => {
    const { dataDir, endpoint } = await publishedDay(t, weedBin);
    const key = (await runCliOnce(['keys', 'create', '--plan', 'paid', '--name', 'engines', '--data-dir', dataDir])).stdout.trim();
    t.match(key, /^pmt_/);
    const serve = runCli(t, ['serve', '--data-dir', dataDir, '--port', '0'], { readyTimeoutMs: 60_000 });
    const url = await serve.ready;
    const t0 = dayStartMs(DAY)! + 1000;
    const asOf = [t0 + 10_000, t0 + 100_000, t0 + 200_000, t0 + 400_000];
    const spark = await engine(python, ['spark', endpoint, BUCKET, PREFIX, sparkJars(), 'w-1', 'w-1-up', DAY, JSON.stringify(asOf)]);
    const m = await readManifest(join(dataDir, 'parquet', 'family=wallet-prediction', 'dataset=book_changes', `date=${DAY}`));
    t.equal(spark.rows, m!.files.reduce((n, f) => n + f.rows, 0), 'Spark reads every book_changes row of the day');
    let levels = 0;
    for (const [i, at] of asOf.entries()) {
      const r = await getJson(`${url}/v3/wallet-prediction/w-1/orderbook/latest?as_of=${at}`, key);
      t.equal(r.status, 200, JSON.stringify(r.body).slice(0, 300));
      const book = r.body.data as { bids: [number, number][]; asks: [number, number][] };
      t.same({ bids: spark.books[i].bids, asks: spark.books[i].asks }, { bids: book.bids, asks: book.asks }, `as of ${new Date(at).toISOString()}`);
      levels += book.bids.length + book.asks.length;
    }
    t.ok(levels > 20, `${levels} levels compared`);
  });
}
