// Typed access to one decoded Arrow chunk's buffers, row by row, with no JavaScript value per cell
// kept: a day of the busiest market is millions of rows, and plain arrays of boxed numbers (what the
// read side's decodeColumns makes) left the Tardis writer spending half its time in the collector.

import type { Data, Table, Vector } from 'apache-arrow';

const utf8 = new TextDecoder();

/** A column of one chunk: `num` for timestamps (µs), int64 and decimals (unscaled), `text`, `bool`. */
export class Col {
  /** A 64-bit column's values as (low, high) 32-bit words, `stride` words apart (4 for a decimal128). */
  readonly words: Uint32Array | null = null;
  readonly stride: number = 2;
  /**
   * The chunk's buffers, read once: Arrow's `nullCount` is a getter that counts, and the rows are
   * read millions of times. `nulls` is null when the chunk has no null.
   */
  private readonly nulls: Uint8Array | null;
  private readonly at: number;
  private readonly offs: Int32Array | null;
  private readonly bytes: Uint8Array | null;
  private prevAt = -1;
  private prevLen = -1;
  private prevText: string | null = null;

  constructor(
    private readonly d: Data,
    private readonly v: Vector,
  ) {
    const vals = d.values as ArrayBufferView | undefined;
    this.nulls = d.nullBitmap && d.nullCount > 0 ? d.nullBitmap : null;
    this.at = d.offset;
    this.offs = (d.valueOffsets as Int32Array | undefined) ?? null;
    this.bytes = vals instanceof Uint8Array ? vals : null;
    // apache-arrow's types name themselves (Int64, Timestamp<…>, Decimal[…]); the base type's declaration does not say so.
    // eslint-disable-next-line @typescript-eslint/no-base-to-string
    const kind = String(d.type);
    if (vals && (/^(Int64|Timestamp|Decimal)/i.test(kind) || (d.type as { bitWidth?: number }).bitWidth === 64)) {
      const bw = (d.type as { bitWidth?: number }).bitWidth ?? 64;
      this.stride = bw / 32;
      this.words = new Uint32Array(vals.buffer, vals.byteOffset + d.offset * (bw / 8), d.length * this.stride);
    }
  }

  private valid(i: number): boolean {
    const bm = this.nulls;
    if (bm === null) return true;
    const at = this.at + i;
    return ((bm[at >> 3] >> (at & 7)) & 1) === 1;
  }

  isNull(i: number): boolean {
    return !this.valid(i);
  }

  /** A non-negative 64-bit value below 2^53 as a number (NaN when null). */
  num(i: number): number {
    if (!this.valid(i)) return NaN;
    const w = this.words!;
    const k = i * this.stride;
    return w[k + 1] * 4294967296 + w[k];
  }

  /**
   * `compact(num(i), div)` (book.ts) for a value that is not null nor beyond 2^53, computed here:
   * a number returned by `num` and passed on is boxed, and this is read once per level of a day.
   */
  compactNum(i: number, div: number): number {
    const w = this.words!;
    const k = i * this.stride;
    const u = w[k + 1] * 4294967296 + w[k];
    const q = Math.round(u / div);
    return q * div === u && q < 0x3fffffff ? -(q | 0) - 1 : u;
  }

  /** Whether the unscaled value exceeds 2^53 (read it with `big`). */
  huge(i: number): boolean {
    return this.words![i * this.stride + 1] >= 0x200000;
  }

  big(i: number): bigint {
    const k = i * this.stride;
    return (BigInt(this.words![k + 1]) << 32n) | BigInt(this.words![k]);
  }

  bool(i: number): boolean {
    const at = this.at + i;
    return ((this.bytes![at >> 3] >> (at & 7)) & 1) === 1;
  }

  /**
   * Whether the cell is the text `want` (as its UTF-8 bytes `bytes`): compared byte for byte where
   * the chunk holds plain UTF-8, so that no string is made (false for null).
   */
  is(i: number, want: string, bytes: Uint8Array): boolean {
    if (!this.valid(i)) return false;
    const offs = this.offs,
      vals = this.bytes;
    if (offs === null || vals === null) return this.v.get(i) === want; // a dictionary-encoded chunk: through its vector
    const st = offs[this.at + i];
    const n = bytes.length;
    if (offs[this.at + i + 1] - st !== n) return false;
    for (let k = 0; k < n; k++) if (vals[st + k] !== bytes[k]) return false;
    return true;
  }

  /** Text, or null; a value equal to the previous row's bytes reuses its string. */
  text(i: number): string | null {
    if (!this.valid(i)) return null;
    const offs = this.offs,
      bytes = this.bytes;
    if (offs === null || bytes === null) return this.v.get(i) as string; // a dictionary-encoded chunk: through its vector
    const st = offs[this.at + i],
      en = offs[this.at + i + 1];
    const len = en - st;
    if (this.prevText !== null && len === this.prevLen) {
      let same = true;
      for (let k = 0; k < len; k++)
        if (bytes[st + k] !== bytes[this.prevAt + k]) {
          same = false;
          break;
        }
      if (same) {
        this.prevAt = st;
        return this.prevText;
      }
    }
    this.prevAt = st;
    this.prevLen = len;
    this.prevText = utf8.decode(bytes.subarray(st, en));
    return this.prevText;
  }
}

/** The chunks of a decoded table, each as named columns (one `Col` per name). */
export function* chunks(t: Table, names: readonly string[]): Generator<{ n: number; c: Record<string, Col> }> {
  for (const batch of t.batches) {
    const c: Record<string, Col> = {};
    for (const name of names) {
      const v = batch.getChild(name);
      if (!v) throw new Error(`tardis: the partition has no column ${name}`);
      c[name] = new Col(v.data[0] as Data, v);
    }
    yield { n: batch.numRows, c };
  }
}
