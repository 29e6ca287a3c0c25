// The CSV's bytes written into one preallocated buffer instead of a string per row: a day of the
// busiest market is millions of rows, and the strings built for each (then flattened and encoded
// again by zlib) were most of what the writer's thread spent outside the book. Numbers are written
// as their digits straight into the buffer: looking their texts up in caches (a Map per cell) cost
// more than making the digits again, and left a string or a boxed number per row for the collector.

import { decimalText } from './book.js';

/** A chunk's size: a block of the compressor (parallel-gzip.ts) as it is, without a copy. */
const CHUNK_BYTES = 1 << 20;
/** 10^k for the scales a decimal is written at. */
const POW10 = Array.from({ length: 19 }, (_, k) => 10 ** k);
const TWO_53 = 2 ** 53;

export class TextOut {
  private buf: Buffer = Buffer.allocUnsafe(CHUNK_BYTES + (CHUNK_BYTES >> 2));
  private pos = 0;
  private headAt = 0;
  private headEnd = 0;
  private readonly one = new Float64Array(1);

  /** Whether a chunk's worth is waiting: take() it. */
  get full(): boolean {
    return this.pos >= CHUNK_BYTES;
  }

  /** Bytes taken so far, and the buffers taken, oldest first, with the count each one ends at. */
  private taken = 0;
  private readonly inFlight: { readonly buf: Buffer; readonly end: number }[] = [];

  /**
   * `consumed`: how many of the bytes taken the reader is done with. A taken buffer is reused once
   * they include it: a new half-megabyte buffer a chunk (hundreds a file) is memory outside the heap
   * that V8 answers with full collections.
   */
  constructor(private readonly consumed?: () => number) {}

  /** The bytes written so far (a buffer of their own: zlib may hold them), or null when none. */
  take(): Buffer | null {
    if (this.pos === 0) return null;
    const out = this.buf.subarray(0, this.pos);
    this.taken += this.pos;
    let next: Buffer | undefined;
    if (this.consumed) {
      this.inFlight.push({ buf: this.buf, end: this.taken });
      if (this.inFlight[0].end <= this.consumed()) next = this.inFlight.shift()!.buf;
    }
    this.buf = next ?? Buffer.allocUnsafe(Math.max(CHUNK_BYTES + (CHUNK_BYTES >> 2), this.buf.length));
    this.pos = 0;
    return out;
  }

  private room(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    const b = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.pos + n));
    this.buf.copy(b, 0, 0, this.pos);
    this.buf = b;
  }

  /** Any text (UTF-8). */
  text(s: string): void {
    this.room(s.length * 3);
    this.pos += this.buf.write(s, this.pos, 'utf8');
  }

  /** Marks where a row's leading cells start: `endHead` ends them, `repeatHead` copies them again. */
  startHead(): void {
    this.headAt = this.pos;
  }

  endHead(): void {
    this.headEnd = this.pos;
  }

  repeatHead(): void {
    const n = this.headEnd - this.headAt;
    this.room(n);
    this.buf.copyWithin(this.pos, this.headAt, this.headEnd);
    this.pos += n;
  }

  bytes(b: Uint8Array): void {
    const n = b.length;
    this.room(n);
    const buf = this.buf;
    let p = this.pos;
    for (let k = 0; k < n; k++) buf[p++] = b[k];
    this.pos = p;
  }

  byte(c: number): void {
    this.room(1);
    this.buf[this.pos++] = c;
  }

  /** `String(n)`: the digits of a non-negative integer below 2^53, other numbers as JavaScript writes them. */
  int(n: number): void {
    if (!(n >= 0 && n < TWO_53) || n !== Math.floor(n)) return this.text(String(n));
    this.room(16);
    if (n < 1e8) return this.digits(n);
    // Two halves of at most 8 digits each, so that the digits come from small-integer arithmetic.
    let hi = Math.floor(n / 1e8);
    let lo = n - hi * 1e8;
    if (lo < 0) {
      hi -= 1;
      lo += 1e8;
    } else if (lo >= 1e8) {
      hi += 1;
      lo -= 1e8;
    }
    this.digits(hi);
    this.padded(lo, 8);
  }

  /**
   * `decimalText(unscaled, scale)` (book.ts): the same text, written without a string. Unscaled
   * values that are not integers below 2^53 in size go through decimalText itself.
   */
  decimal(unscaled: number, scale: number): void {
    this.one[0] = unscaled;
    this.decimalAt(this.one, 0, scale);
  }

  /** `decimal(values[r], scale)`, the number read here: passed as an argument, a double is boxed. */
  decimalAt(values: Float64Array, r: number, scale: number): void {
    const v = values[r];
    const neg = v < 0;
    const u = neg ? -v : v;
    const unit = POW10[scale];
    // decimalText's own arithmetic, so that even its rounding at the edges gives the same digits.
    const int = Math.floor(u / unit);
    let frac = u - int * unit;
    if (!(u < TWO_53) || u !== Math.floor(u) || frac < 0 || frac >= unit || int >= 1e8 || unit === undefined) {
      return this.text(decimalText(v, scale));
    }
    this.room(scale + 12);
    if (neg) this.buf[this.pos++] = 45; // -
    this.digits(int);
    if (frac === 0) return;
    // Below 10^18 and an integer: as int32 when it fits, so that % and / stay integer operations.
    let digits = scale;
    if (frac < 2147483648) {
      let f = frac | 0;
      while (f % 10 === 0) {
        f = (f / 10) | 0;
        digits--;
      }
      frac = f;
    } else {
      while (frac % 10 === 0) {
        frac /= 10;
        digits--;
      }
    }
    this.buf[this.pos++] = 46; // .
    this.padded(frac, digits);
  }

  /** The digits of an integer in [0, 1e8) (room already made). */
  private digits(n: number): void {
    let len = 1;
    while (len < 8 && n >= POW10[len]) len++;
    this.padded(n, len);
  }

  /** An integer in [0, 10^width) as exactly `width` digits, zeros first (room already made). */
  private padded(n: number, width: number): void {
    const buf = this.buf;
    let p = this.pos + width;
    this.pos = p;
    if (n < 2147483648) {
      let v = n | 0; // int32: the divisions below stay integer ones
      for (let k = 0; k < width; k++) {
        const q = (v / 10) | 0;
        buf[--p] = 48 + v - q * 10;
        v = q;
      }
      return;
    }
    for (let k = 0; k < width; k++) {
      const q = Math.floor(n / 10);
      buf[--p] = 48 + (n - q * 10);
      n = q;
    }
  }
}
