// The batched writer makes the same file as the one-shot encoder: same rows and values, same row
// groups, same footer metadata, for plain arrays, typed doubles and chunked doubles alike, and a
// column that turned plain (a decimal past 2^53) on the way.

import t from 'tap';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BATCH_ROWS, encodeParquetBatched } from '../../src/storage/parquet/encode-batched.js';
import { ParquetFileReader, encodeParquet } from '../../src/storage/parquet/file.js';
import type { ColumnSpec, ColumnValues } from '../../src/storage/parquet/columns.js';
import { RowSink } from '../../src/storage/parquet/rows.js';

const specs: ColumnSpec[] = [
  { name: 'market_id', kind: 'utf8', nullable: false, doc: '' },
  { name: 'receive_time', kind: 'ts', nullable: false, delta: true, doc: '' },
  { name: 'seq', kind: 'int64', nullable: false, delta: true, doc: '' },
  { name: 'price', kind: 'decimal', scale: 4, nullable: true, doc: '' },
  { name: 'n', kind: 'int32', nullable: true, doc: '' },
  { name: 'x', kind: 'f64', nullable: true, doc: '' },
  { name: 'is_snapshot', kind: 'bool', nullable: false, doc: '' },
];

async function readBack(
  dir: string,
  name: string,
  bytes: Uint8Array,
): Promise<{ rows: unknown[]; groups: number[]; meta: [string, string][] }> {
  const path = join(dir, name);
  await writeFile(path, bytes);
  const r = await ParquetFileReader.open(path);
  try {
    const table = await r.readAll();
    const rows = table.toArray().map((row) => JSON.parse(JSON.stringify(row.toJSON(), (_, v) => (typeof v === 'bigint' ? `${v}n` : v))));
    return { rows, groups: r.footer.rowGroupRows, meta: [...r.footer.metadata].sort() };
  } finally {
    r.close();
  }
}

t.test('batched and one-shot encoding write the same file content', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'pmtape-batched-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const n = 3 * BATCH_ROWS + 1234; // several batches and a short last one, across row groups
  const sink = new RowSink(specs);
  for (let i = 0; i < n; i++) {
    sink.reset();
    sink.set('market_id', i < n / 2 ? 'm-1' : 'm-2');
    sink.set('receive_time', 1_795_392_001_000 + i * 0.25);
    sink.set('seq', i + 1);
    // One price past 2^53 late in the run: that column turns into plain values from there.
    sink.set('price', i === n - 10 ? 123_456_789_012_345_678n : i % 9 === 0 ? null : 5200 + i);
    sink.set('n', i % 5 === 0 ? null : i);
    sink.set('x', i % 7 === 0 ? null : i / 3);
    sink.set('is_snapshot', i % 11 === 0);
    sink.emit();
  }
  const opts = { rowGroupRows: 10_000, metadata: new Map([['pmtape.test', 'yes']]) };
  const cols = sink.cols as readonly ColumnValues[];
  const one = await readBack(dir, 'one.parquet', encodeParquet(specs, cols, opts));
  const batched = await readBack(dir, 'batched.parquet', await encodeParquetBatched(specs, cols, opts));
  t.equal(batched.rows.length, n, `${n} rows`);
  t.same(batched.groups, one.groups, `row groups ${batched.groups.join(', ')}`);
  t.same(batched.meta, one.meta, 'footer metadata');
  t.same(batched.rows, one.rows, 'every value');
  t.match(JSON.stringify(batched.rows[n - 10]), /123456789012345678/, 'the big decimal kept whole');
  t.same(batched.rows[9], { ...(batched.rows[9] as object), price: null }, 'nulls kept');

  // Typed doubles as well as plain arrays.
  const typed: ColumnValues[] = [
    cols[0],
    cols[1],
    Float64Array.from({ length: n }, (_, i) => i + 1),
    Array.from({ length: n }, (_, i) => i),
    cols[4],
    cols[5],
    cols[6],
  ];
  const a = await readBack(dir, 'typed-one.parquet', encodeParquet(specs, typed, opts));
  const b = await readBack(dir, 'typed-batched.parquet', await encodeParquetBatched(specs, typed, opts));
  t.same(b.rows, a.rows, 'the same from a Float64Array and plain numbers');
});

t.test('a small input is written in one go, an empty one too', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'pmtape-batched-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const opts = { rowGroupRows: 100, metadata: new Map<string, string>() };
  const empty = await readBack(
    dir,
    'empty.parquet',
    await encodeParquetBatched(
      specs,
      specs.map(() => []),
      opts,
    ),
  );
  t.equal(empty.rows.length, 0, 'an empty file still has its schema and opens');
  const few = await readBack(dir, 'few.parquet', await encodeParquetBatched(specs, [['m'], [1], [1], [5200], [1], [0.5], [false]], opts));
  t.equal(few.rows.length, 1);
});

t.test('a sink reused after clear writes only the new rows, shorter or longer than the file before', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'pmtape-batched-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const opts = { rowGroupRows: 10_000, metadata: new Map<string, string>() };
  const sink = new RowSink(specs);
  const fill = (n: number, tag: string): void => {
    for (let i = 0; i < n; i++) {
      sink.reset();
      sink.set('market_id', `${tag}-${i % 3}`);
      sink.set('receive_time', 1_795_392_001_000 + i);
      sink.set('seq', i + 1);
      sink.set('price', 5200 + i);
      sink.set('is_snapshot', tag === 'b' ? i % 2 === 0 : false);
      sink.emit();
    }
  };
  // Plain columns (text, bool) keep their arrays across `clear`; what a file sees is its own rows.
  for (const [n, tag] of [
    [2 * BATCH_ROWS + 5, 'a'],
    [1000, 'b'],
    [BATCH_ROWS + 3, 'c'],
    [3 * BATCH_ROWS, 'd'],
  ] as const) {
    fill(n, tag);
    t.same(sink.column('market_id').length, n, `${tag}: column() is ${n} long`);
    t.same(
      [...(sink.column('market_id', n - 2) as string[])],
      [`${tag}-${(n - 2) % 3}`, `${tag}-${(n - 1) % 3}`],
      `${tag}: column(from) is the new rows' tail`,
    );
    const back = await readBack(dir, `${tag}.parquet`, await encodeParquetBatched(specs, sink.cols as readonly ColumnValues[], opts));
    t.equal(back.rows.length, n, `${tag}: ${n} rows written`);
    const ids = new Set(back.rows.map((r) => (r as { market_id: string }).market_id.split('-')[0]));
    t.same([...ids], [tag], `${tag}: no row of an earlier file`);
    t.equal(
      back.rows.filter((r) => (r as { is_snapshot: boolean }).is_snapshot).length,
      tag === 'b' ? 500 : 0,
      `${tag}: the bool column is this file's`,
    );
    sink.clear();
  }
});
