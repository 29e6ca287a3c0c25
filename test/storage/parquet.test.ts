// The Parquet writer/reader module on awkward values: nulls in every nullable kind, empty and
// non-ASCII text, empty lists, seq up to 2^53 − 1 and sub-millisecond receive times, several row
// groups; read back by parquet-wasm (pmtape's reader) and by DuckDB, value for value. The column
// builders' shortcuts (repeated and short ASCII text copied by hand, 64-bit integers and decimals
// written as two words, validity gathered a byte at a time) are checked on random columns.

import t from 'tap';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import fc from 'fast-check';
import { ParquetFileReader, encodeParquet } from '../../src/storage/parquet/file.js';
import type { ColumnSpec, ColumnValues } from '../../src/storage/parquet/columns.js';

const specs: ColumnSpec[] = [
  { name: 'market_id', kind: 'utf8', nullable: false, doc: '' },
  { name: 'receive_time', kind: 'ts', nullable: false, doc: '' },
  { name: 'source_time', kind: 'ts', nullable: true, doc: '' },
  { name: 'seq', kind: 'int64', nullable: false, doc: '' },
  { name: 'note', kind: 'utf8', nullable: true, doc: '' },
  { name: 'value', kind: 'f64', nullable: true, doc: '' },
  { name: 'flag', kind: 'bool', nullable: false, doc: '' },
  { name: 'prices', kind: 'list_f64', nullable: true, doc: '' },
  { name: 'texts', kind: 'list_utf8', nullable: true, doc: '' },
];

t.test('values survive a round trip through parquet-wasm and DuckDB', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'pmtape-parquet-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const n = 5000;
  const rows = Array.from({ length: n }, (_, i) => ({
    market_id: i % 3 === 0 ? 'KX€-ünïcode-市場' : `m${i % 7}`,
    receive_time: 1_785_067_200_000 + i + (i % 4) * 0.25,
    source_time: i % 5 === 0 ? null : 1_785_067_200_000 + i - 3,
    seq: i === n - 1 ? Number.MAX_SAFE_INTEGER : 2 ** 40 + i,
    note: i % 2 ? null : i % 4 ? '' : `n${i}`,
    value: i % 6 === 0 ? null : i / 7,
    flag: i % 3 === 1,
    prices: i % 10 === 0 ? null : i % 10 === 1 ? [] : [0.5, 0.49 - i / 1e6],
    texts: i % 9 === 0 ? null : ['0.5200', `${i}.00`],
  }));
  const cols = specs.map((s) => rows.map((r) => (r as Record<string, unknown>)[s.name])) as never;
  const bytes = encodeParquet(specs, cols, { rowGroupRows: 1024, metadata: new Map([['k', 'v']]) });
  const file = join(dir, 'x.parquet');
  await writeFile(file, bytes);

  const r = await ParquetFileReader.open(file);
  t.equal(r.footer.rows, n);
  t.equal(r.footer.rowGroups, 5);
  t.same(r.footer.rowGroupRows, [1024, 1024, 1024, 1024, 904]);
  t.equal(r.footer.metadata.get('k'), 'v');
  const g = await r.readRowGroup(4, ['seq', 'market_id']);
  t.equal(g.numRows, 904);
  t.equal(BigInt(g.getChild('seq')!.get(903) as bigint), BigInt(Number.MAX_SAFE_INTEGER), 'INT64 kept exactly');
  r.close();

  const db = await DuckDBInstance.create(':memory:');
  const conn = await db.connect();
  t.teardown(() => {
    conn.closeSync();
    db.closeSync();
  });
  const got = (
    await conn.runAndReadAll(
      `SELECT market_id, epoch_us(receive_time) AS r, epoch_us(source_time) AS s, seq, note, value, flag, prices, texts FROM '${file}'`,
    )
  ).getRowObjectsJS();
  t.equal(got.length, n);
  let bad = 0;
  got.forEach((g, i) => {
    const w = rows[i];
    const same =
      g.market_id === w.market_id &&
      Number(g.r) === Math.round(w.receive_time * 1000) &&
      (g.s === null ? w.source_time === null : Number(g.s) === w.source_time! * 1000) &&
      BigInt(g.seq as bigint) === BigInt(w.seq) &&
      g.note === w.note &&
      g.value === w.value &&
      g.flag === w.flag &&
      JSON.stringify(g.prices) === JSON.stringify(w.prices) &&
      JSON.stringify(g.texts) === JSON.stringify(w.texts);
    if (!same && bad++ < 3) t.fail(`row ${i} differs`, { got: g, want: w });
  });
  t.equal(bad, 0, 'every value equal');
  const meta = (await conn.runAndReadAll(`SELECT DISTINCT compression FROM parquet_metadata('${file}')`)).getRowObjectsJS();
  t.same(meta, [{ compression: 'ZSTD' }]);
  const schema = (
    await conn.runAndReadAll(`SELECT name, logical_type FROM parquet_schema('${file}') WHERE name IN ('receive_time', 'seq')`)
  ).getRowObjectsJS();
  t.match(JSON.stringify(schema), /isAdjustedToUTC=1, unit=TimeUnit\(MILLIS=<null>, MICROS=MicroSeconds\(\)/, 'TIMESTAMP(MICROS, UTC)');
});

t.test('a non-nullable column with a null is refused before anything is written', async (t) => {
  t.throws(() => encodeParquet([specs[0]], [[null]] as never, { rowGroupRows: 10, metadata: new Map() }), /not nullable/);
});

t.test('a row range decodes the same values as the whole table, across chunks, nulls and repeated texts', async (t) => {
  const { decodeColumns } = await import('../../src/storage/parquet/records.js');
  const { Table, Utf8, Dictionary, Int32, Float64, vectorFromArray } = await import('apache-arrow');
  const specs: ColumnSpec[] = [
    { name: 'm', kind: 'utf8', nullable: true, doc: '' },
    { name: 'd', kind: 'utf8', nullable: false, doc: '' },
    { name: 'x', kind: 'f64', nullable: true, doc: '' },
  ];
  const half = (texts: (string | null)[], dict: string[], xs: (number | null)[]) =>
    new Table({
      m: vectorFromArray(texts, new Utf8()),
      d: vectorFromArray(dict, new Dictionary(new Utf8(), new Int32())),
      x: vectorFromArray(xs, new Float64()),
    });
  const a = half(['mkt', 'mkt', null, 'mkt-2', 'é'], ['up', 'up', 'down', 'up', 'down'], [1.5, null, 3, 4, 5]);
  const b = half(['é', 'é', 'mkt', 'mkt', 'x'], ['down', 'up', 'up', 'up', 'down'], [6, 7, null, 9, 10]);
  const both = a.concat(b);
  t.equal(both.data.length, 2, 'two chunks');
  const whole = decodeColumns(both, specs);
  t.same(whole.m, ['mkt', 'mkt', null, 'mkt-2', 'é', 'é', 'é', 'mkt', 'mkt', 'x'], 'texts, nulls and runs decode exactly');
  t.same(whole.d, ['up', 'up', 'down', 'up', 'down', 'down', 'up', 'up', 'up', 'down'], 'dictionary-encoded texts too');
  for (const [from, to] of [
    [0, 10],
    [3, 7],
    [4, 5],
    [5, 10],
    [2, 2],
  ]) {
    const part = decodeColumns(both, specs, from, to);
    for (const s of specs) t.same(part[s.name], whole[s.name].slice(from, to), `rows [${from}, ${to}) of ${s.name}`);
  }
});

t.test('random columns: text, decimals, times and integers read back exactly through DuckDB', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'pmtape-parquet-'));
  const db = await DuckDBInstance.create(':memory:');
  const conn = await db.connect();
  t.teardown(async () => {
    conn.closeSync();
    db.closeSync();
    await rm(dir, { recursive: true, force: true });
  });
  const cols: ColumnSpec[] = [
    { name: 'txt', kind: 'utf8', nullable: true, doc: '' },
    { name: 'dec', kind: 'decimal', scale: 4, nullable: true, doc: '' },
    { name: 'ts', kind: 'ts', nullable: true, doc: '' },
    { name: 'i', kind: 'int64', nullable: true, doc: '' },
  ];
  // Texts drawn from a small pool so runs repeat: ASCII short and long (the copy-by-hand limit is 96
  // bytes), empty, multi-byte, an emoji, and null.
  const pool = ['', 'bid', 'ask', '540817', 'x'.repeat(96), 'y'.repeat(97), 'é', 'ünï-市場', '😀 up', 'a'.repeat(200) + 'é', null];
  const text = fc.constantFrom(...pool);
  const dec = fc.oneof(
    fc.constant(NaN),
    fc.integer({ min: 0, max: 2 ** 32 + 5 }),
    fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }),
    fc.constantFrom(0, 2 ** 32 - 1, 2 ** 32, 10 ** 15),
  );
  const time = fc.oneof(
    fc.constant(null),
    fc.integer({ min: -1e12, max: 4e12 }).map((ms) => ms + [0, 0.25, 0.5, 0.001][Math.abs(ms) % 4]),
  );
  const int = fc.oneof(
    fc.constant(null),
    fc.integer({ min: Number.MIN_SAFE_INTEGER, max: Number.MAX_SAFE_INTEGER }),
    fc.constantFrom(-1, 0, 2 ** 32, -(2 ** 32), -(2 ** 32) - 1),
  );
  let run = 0;
  await fc.assert(
    fc.asyncProperty(
      fc.array(fc.tuple(text, dec, time, int), { minLength: 1, maxLength: 400 }),
      fc.integer({ min: 1, max: 50 }),
      async (rows, chunk) => {
        // Decimals as the row sink hands them over: raw doubles (NaN = null) in chunks of any size.
        const doubles = Float64Array.from(rows, (r) => r[1]);
        const chunks: Float64Array[] = [];
        for (let at = 0; at < doubles.length; at += chunk) chunks.push(doubles.slice(at, at + chunk));
        const values: ColumnValues[] = [
          rows.map((r) => r[0]),
          { chunks, length: rows.length },
          rows.map((r) => r[2]),
          rows.map((r) => r[3]),
        ];
        const file = join(dir, `r${run++}.parquet`);
        await writeFile(file, encodeParquet(cols, values, { rowGroupRows: 128, metadata: new Map() }));
        const got = (
          await conn.runAndReadAll(
            `SELECT txt, CAST(CAST(dec AS DECIMAL(38, 4)) * 10000 AS BIGINT) AS dec, epoch_us(ts) AS ts, i FROM '${file}'`,
          )
        ).getRowObjectsJS();
        const want = rows.map(([txt, d, ts, i]) => ({
          txt,
          dec: Number.isNaN(d) ? null : BigInt(d),
          ts: ts === null ? null : BigInt(Math.round(ts * 1000)),
          i: i === null ? null : BigInt(i),
        }));
        t.same(got, want);
        return true;
      },
    ),
    { numRuns: 40 },
  );
});

t.test('a time or an integer past 2^53 is refused, not rounded', async (t) => {
  const seq: ColumnSpec = { name: 'seq', kind: 'int64', nullable: false, doc: '' };
  t.throws(
    () => encodeParquet([seq], [[2 ** 53 + 2]] as never, { rowGroupRows: 10, metadata: new Map() }),
    /seq: .* is not a safe integer/,
  );
  const ts: ColumnSpec = { name: 'receive_time', kind: 'ts', nullable: false, doc: '' };
  t.throws(
    () => encodeParquet([ts], [[1e13]] as never, { rowGroupRows: 10, metadata: new Map() }),
    /receive_time: .* is not a safe integer/,
  );
});
