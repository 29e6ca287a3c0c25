// The Parquet tree is the hand-off to distributed engines (Spark, Trino/Hive, DuckDB): this proves
// that after real compaction of real logs over several days there is no file an engine would
// misread — only Hive `key=value` folders, data files listed in their manifest, everything else
// `_`-prefixed — and that every (family, dataset) keeps one schema with no partition-name clash.

import t from 'tap';
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { join, relative, sep } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { writeFixture } from '../../tools/fixtures/compaction-logs.js';
import { compactDay, stagingFileName, DATASETS } from '../../src/storage/testing.js';
import { FAMILIES } from '../../src/schema/observation.js';
import { DAY_MS, utcDay } from '../../src/schema/time.js';
import { REPO, tempDir } from './helpers.js';

function walk(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...walk(p));
    else out.push(p);
  }
  return out;
}

/** Spark, Hive and Trino skip files and folders whose name starts with `_` or `.`. */
const hidden = (name: string): boolean => name.startsWith('_') || name.startsWith('.');

/** The pages that print a `<!-- query:duckdb -->` query: the README's tour, the self-hosting page and the datasets page. */
const QUERY_PAGES = ['README.md', 'docs/self-hosting.md', 'docs/datasets.md'];

/** The DuckDB query printed on `page`, pointed at `dataDir`. */
function printedDuckdbQuery(page: string, dataDir: string): string {
  const text = readFileSync(join(REPO, page), 'utf8');
  const m = /<!-- query:duckdb -->\s*```sql\n([\s\S]*?)```/.exec(text);
  if (!m) throw new Error(`${page} has no <!-- query:duckdb --> block`);
  return m[1].replaceAll("'data/parquet/", `'${dataDir}/parquet/`);
}

t.test('compacted tree holds only Hive folders, manifest-listed data files and _-prefixed extras', async (t) => {
  const dataDir = tempDir(t);
  const now = Date.now();
  const days = [utcDay(now - 2 * DAY_MS), utcDay(now - DAY_MS)];
  await writeFixture(dataDir, { days, booksPerDay: 120, coinMarkets: 2, seed: 11 });
  for (const day of days) await compactDay(dataDir, day);
  // A crashed compaction leaves its staging file behind: it must be invisible to every engine.
  const someDir = join(dataDir, 'parquet', 'family=coin', 'dataset=book_changes', `date=${days[1]}`);
  const staging = join(someDir, stagingFileName('book_changes', days[1]));
  writeFileSync(staging, 'PAR1 torn staging file from a crashed compaction');
  t.ok(hidden(stagingFileName('book_changes', days[1])), 'staging files start with _');

  const root = join(dataDir, 'parquet');
  const dataFiles: string[] = [];
  for (const file of walk(root)) {
    const parts = relative(root, file).split(sep);
    const name = parts.pop()!;
    if (parts.some(hidden)) continue; // a hidden folder is skipped whole by every engine
    t.equal(parts.length, 3, `${relative(root, file)} sits three Hive levels deep`);
    t.match(parts[0], new RegExp(`^family=(${FAMILIES.join('|')})$`), 'family folder');
    t.match(parts[1], new RegExp(`^dataset=(${DATASETS.join('|')})$`), 'dataset folder');
    t.match(parts[2], /^date=\d{4}-\d{2}-\d{2}$/, 'date folder');
    if (hidden(name)) continue;
    t.match(name, /\.parquet$/, `${name}: every visible file is Parquet`);
    dataFiles.push(file);
    const manifest = JSON.parse(readFileSync(join(file, '..', '_manifest.json'), 'utf8')) as {
      files: { file: string; bytes: number; sha256: string }[];
    };
    const entry = manifest.files.find((f) => f.file === name);
    t.ok(entry, `${name} is listed in its partition's manifest`);
    t.equal(statSync(file).size, entry?.bytes, `${name} has the manifest's size`);
    t.equal(createHash('sha256').update(readFileSync(file)).digest('hex'), entry?.sha256, `${name} has the manifest's sha256`);
  }
  t.ok(dataFiles.length >= 8, `several partitions were written (${dataFiles.length})`);

  const db = await DuckDBInstance.create(':memory:');
  const con = await db.connect();
  t.teardown(() => con.closeSync());
  const rows = async (sql: string): Promise<Record<string, unknown>[]> => (await con.runAndReadAll(sql)).getRowObjectsJS();

  // One schema per (family, dataset) across all its dates, and no column named like a partition key.
  const byPair = new Map<string, { file: string; schema: string }[]>();
  for (const file of dataFiles) {
    const pair = relative(root, file).split(sep).slice(0, 2).join('/');
    const cols = await rows(`SELECT name, type, logical_type, repetition_type FROM parquet_schema('${file}') ORDER BY column_id`);
    const schema = JSON.stringify(cols);
    if (!byPair.has(pair)) byPair.set(pair, []);
    byPair.get(pair)!.push({ file, schema });
    const names = cols.map((c) => String(c.name));
    for (const key of ['family', 'dataset', 'date'])
      t.notOk(names.includes(key), `${relative(root, file)} has no column "${key}" (it would clash with the partition column)`);
    for (const c of cols.filter((c) => c.name === 'receive_time' || c.name === 'source_time')) {
      t.match(
        String(c.logical_type),
        /isAdjustedToUTC=1.*MICROS=MicroSeconds/,
        `${String(c.name)} is TIMESTAMP(MICROS, UTC) in ${relative(root, file)}`,
      );
    }
  }
  const multiDay = [...byPair.entries()].filter(([, files]) => files.length > 1);
  t.ok(multiDay.length >= 3, `several (family, dataset) pairs span more than one date (${multiDay.map(([p]) => p).join(', ')})`);
  for (const [pair, files] of byPair) {
    t.equal(new Set(files.map((f) => f.schema)).size, 1, `${pair}: one schema across ${files.length} partitions`);
  }

  // The DuckDB query each page prints reads the tree as documented, skipping the staging file.
  const manifestRows = dataFiles
    .filter((f) => f.includes(`family=coin${sep}dataset=book_changes${sep}`))
    .reduce(
      (n, f) => n + (JSON.parse(readFileSync(join(f, '..', '_manifest.json'), 'utf8')) as { files: { rows: number }[] }).files[0].rows,
      0,
    );
  for (const page of QUERY_PAGES) {
    const got = await rows(printedDuckdbQuery(page, dataDir));
    const total = got.reduce((n, r) => n + Number(r.rows), 0);
    t.equal(total, manifestRows, `the ${page} query counts exactly the manifest-listed rows (staging skipped)`);
    t.same(
      new Set(got.map((r) => (r.date instanceof Date ? r.date.toISOString() : String(r.date)).slice(0, 10))),
      new Set(days),
      `${page}: the date partition column is discovered`,
    );
  }
});
