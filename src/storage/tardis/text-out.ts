// The CSV's bytes written into one preallocated buffer instead of a string per row: a day of the
// busiest market is millions of rows, and the strings built for each (then flattened and encoded
// again by zlib) were most of what the writer's thread spent outside the book. The cells that
// repeat (prices, sizes, the row kinds) are encoded once and copied.

const CHUNK_BYTES = 1 << 18;

export class TextOut {
  private buf = Buffer.allocUnsafe(CHUNK_BYTES * 2);
  private pos = 0;
  private headAt = 0;
  private headEnd = 0;

  /** Whether a chunk's worth is waiting: take() it. */
  get full(): boolean {
    return this.pos >= CHUNK_BYTES;
  }

  /** The bytes written so far (a buffer of their own: zlib may hold them), or null when none. */
  take(): Buffer | null {
    if (this.pos === 0) return null;
    const out = this.buf.subarray(0, this.pos);
    this.buf = Buffer.allocUnsafe(Math.max(CHUNK_BYTES * 2, this.buf.length));
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

  /** A row's leading cells, kept to be repeated by `repeatHead` for the other rows of its record. */
  head(s: string): void {
    this.headAt = this.pos;
    this.text(s);
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
}

/** Texts as bytes, encoded once each (the texts are a day's few thousand distinct cells). */
export function byteCache<K>(textOf: (k: K) => string): (k: K) => Uint8Array {
  const m = new Map<K, Uint8Array>();
  return (k) => {
    let b = m.get(k);
    if (b === undefined) {
      b = Buffer.from(textOf(k), 'utf8');
      if (m.size < 100_000) m.set(k, b);
    }
    return b;
  };
}
