// Apache Spark reading the archive straight from the bucket: pyspark in local mode with s3a://
// (hadoop-aws at pyspark's Hadoop version, jars from the spark toolchain) reads a day of
// wallet-prediction book_changes from a real SeaweedFS, with hive partitioning, and rebuilds a book
// (docs/datasets.md's rule) that equals what `pmtape serve` on the recorder's data dir answers as_of.

import t from 'tap';
import { join } from 'node:path';
import { requireTool } from '../../helpers/toolchains.js';
import { sparkJars } from '../../../tools/toolchains/spark.js';
import { dayStartMs } from '../../../src/schema/time.js';
import { readManifest } from '../../../src/storage/parquet/manifest.js';
import { getJson, runCli, runCliOnce } from '../../selfhost/helpers.js';
import { DAY } from './common.js';
import { BUCKET, PREFIX, engine, publishedDay } from './engines-helpers.js';

// Spark's JVM start and s3a's first requests take minutes on a busy 2-core machine.
t.setTimeout(1_200_000);
const weedBin = requireTool(t, 'seaweedfs');
const python = requireTool(t, 'spark');

if (weedBin && python) {
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
    t.equal(
      spark.rows,
      m!.files.reduce((n, f) => n + f.rows, 0),
      'Spark reads every book_changes row of the day',
    );
    let levels = 0;
    for (const [i, at] of asOf.entries()) {
      const r = await getJson(`${url}/v3/wallet-prediction/w-1/orderbook/latest?as_of=${at}`, key);
      t.equal(r.status, 200, JSON.stringify(r.body).slice(0, 300));
      const book = r.body.data as { bids: [number, number][]; asks: [number, number][] };
      t.same(
        { bids: spark.books[i].bids, asks: spark.books[i].asks },
        { bids: book.bids, asks: book.asks },
        `as of ${new Date(at).toISOString()}`,
      );
      levels += book.bids.length + book.asks.length;
    }
    t.ok(levels > 20, `${levels} levels compared`);
  });
}
