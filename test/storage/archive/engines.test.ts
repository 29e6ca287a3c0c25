// Engines reading the archive straight from the bucket (a real SeaweedFS holding a compacted sim
// day published by `archive sync`), each run as a child process the way docs/datasets.md shows:
// DuckDB (httpfs, the docs' query verbatim), pyarrow (S3FileSystem + dataset, hive partitioning) and
// polars (scan_parquet on s3://) count the same rows and read the same values as from the local
// Parquet. Spark is in spark.test.ts.

import t from 'tap';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { requireTool } from '../../helpers/toolchains.js';
import { listPartitions, readManifest } from '../../../src/storage/parquet/manifest.js';
import { REPO } from '../../selfhost/helpers.js';
import { ACCESS_KEY, SECRET_KEY } from '../../../tools/fixtures/weed.js';
import { DAY } from './common.js';
import { BUCKET, PREFIX, engine, publishedDay } from './engines-helpers.js';

// Each test starts weed and a Python engine: minutes on a busy 2-core machine.
t.setTimeout(900_000);
const weedBin = requireTool(t, 'seaweedfs');
const python = requireTool(t, 'spark');

if (weedBin && python) {
  t.test('pyarrow and polars read the bucket: same rows and values as the local Parquet', async (t) => {
    const { dataDir, endpoint } = await publishedDay(t, weedBin);
    const rows = new Map<string, number>();
    for (const p of await listPartitions(dataDir)) {
      const m = await readManifest(p.dir);
      if (m && m.files.length > 0)
        rows.set(
          `family=${p.family}/dataset=${p.dataset}`,
          m.files.reduce((n, f) => n + f.rows, 0),
        );
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
      .replace("'YOUR_KEY_ID'", `'${ACCESS_KEY}'`)
      .replace("'YOUR_SECRET'", `'${SECRET_KEY}'`)
      .replaceAll('s3://my-archive/pmtape/', `s3://${BUCKET}/${PREFIX}/`);
    t.not(sql, m[1], 'the placeholders were replaced');
    const local = sql.replaceAll(`s3://${BUCKET}/${PREFIX}/parquet/`, `${join(dataDir, 'parquet')}/`);
    const out = await engine(python, ['duckdb', sql, local]);
    t.ok(out.bucket.length >= 2, `${out.bucket.length} rows (date, market) from the bucket`);
    t.same(out.bucket, out.local, 'the same rows as from the local files');
    t.ok(
      out.bucket.every((r: { date: string }) => r.date === DAY),
      'the hive date column',
    );
  });
}
