// One engine-neutral text per Parquet value, for tests that compare what DuckDB and polars read:
// times as epoch µs, decimals and numbers as the engines print them, booleans as true/false, lists
// as JSON (polars gives lists as arrays: the tests stringify them). datasets-readers.test.ts proves
// the two agree on every value of every dataset.

import pl from 'nodejs-polars';
import type { ColumnSpec } from '../../src/storage/testing.js';

/** The DuckDB select expression of a column as text. */
export function duckExpr(c: ColumnSpec): string {
  const q = `"${c.name}"`; // quoted: `window` is a keyword
  if (c.kind === 'ts') return `epoch_us(${q})::VARCHAR AS ${q}`;
  if (c.kind.startsWith('list_')) return `to_json(${q})::VARCHAR AS ${q}`;
  return `${q}::VARCHAR AS ${q}`;
}

/** The polars expression of a column as text (lists left as lists). */
export function polarsExpr(c: ColumnSpec): pl.Expr {
  const col = pl.col(c.name);
  if (c.kind === 'ts') return col.cast(pl.Int64).cast(pl.Utf8).alias(c.name);
  if (c.kind === 'bool')
    return pl.when(col.isNull()).then(pl.lit(null)).when(col).then(pl.lit('true')).otherwise(pl.lit('false')).alias(c.name);
  if (c.kind.startsWith('list_')) return col.alias(c.name);
  return col.cast(pl.Utf8).alias(c.name);
}
