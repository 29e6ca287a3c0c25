// What the Parquet reader keeps of a row group once decoded: a chunk of records in seq order with
// their seqs and receive times as typed arrays (records parsed only when asked for), or just a v2 row
// group's raw seq words, which a chunk binary-searches to decode only its own rows.

import type { Recorded } from '../../schema/observation.js';
import { int64At } from './columns.js';
import type { Columns, RecordRow } from './records.js';

/** One decoded group of records (a v1 row group, or a v2 record chunk) in seq order. */
export class DecodedGroup {
  private readonly parsed: (Recorded | undefined)[];
  constructor(
    readonly seqs: Float64Array,
    readonly recvUs: Float64Array,
    readonly checkpoints: Uint8Array,
    private readonly texts: (string | Recorded)[],
    readonly bytes: number,
  ) {
    this.parsed = new Array<Recorded | undefined>(texts.length);
  }

  record(i: number): Recorded {
    const t = this.texts[i];
    return (this.parsed[i] ??= typeof t === 'string' ? (JSON.parse(t) as Recorded) : t);
  }

  static of(rows: readonly RecordRow[], bytes: number): DecodedGroup {
    const n = rows.length;
    const seqs = new Float64Array(n);
    const recvUs = new Float64Array(n);
    const cps = new Uint8Array(n);
    rows.forEach((r, i) => {
      seqs[i] = r.seq;
      recvUs[i] = Math.round(r.recvMs * 1000);
      cps[i] = r.checkpoint ? 1 : 0;
    });
    return new DecodedGroup(
      seqs,
      recvUs,
      cps,
      rows.map((r) => r.rec),
      bytes,
    );
  }
}

/** Row ranges of several decoded row groups as one set of columns. */
export function joinSlices(slices: readonly { cols: Columns; a: number; b: number }[]): { cols: Columns; a: number; b: number } {
  const cols: Columns = {};
  for (const name of Object.keys(slices[0].cols)) {
    const out: unknown[] = [];
    for (const s of slices) for (let i = s.a; i < s.b; i++) out.push(s.cols[name][i]);
    cols[name] = out;
  }
  return { cols, a: 0, b: cols.seq.length };
}

/**
 * The seq column of a v2 row group: a chunk locates its rows by seq and reads only those, so a
 * one-hour read of a market does not decode a whole 65,536-row group. Kept as the raw 64-bit words
 * (a binary search converts the few it touches, not all 65,536).
 */
export interface RawGroup {
  readonly seqWords: Uint32Array;
  readonly bytes: number;
}

/** First row in [lo, hi) whose seq is ≥ `x` (seqs ascending there). */
export function lowerBound(w: Uint32Array, x: number, lo: number, hi: number): number {
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (int64At(w, mid) < x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
