// The Tardis writer's numbers written as digits straight into its buffer (src/storage/tardis/text-out.ts)
// are the texts the string-building writer made: `String(n)` for timestamps and counts, and
// `decimalText(unscaled, scale)` for prices and sizes, at every scale the files use and at the edges
// (zero, trailing zeros, negative prices of a yes/no view's other ladder, int32 and 2^53 boundaries,
// values whose division rounds, NaN), plus 20,000 values from a fixed pseudo-random walk.

import t from 'tap';
import { decimalText } from '../../src/storage/tardis/book.js';
import { TextOut } from '../../src/storage/tardis/text-out.js';

function written(f: (w: TextOut) => void): string {
  const w = new TextOut();
  f(w);
  return w.take()?.toString('utf8') ?? '';
}

const EDGES = [
  0,
  1,
  9,
  10,
  99,
  100,
  101,
  1e7 - 1,
  1e7,
  1e8 - 1,
  1e8,
  1e8 + 1,
  2 ** 31 - 1,
  2 ** 31,
  2 ** 31 + 1,
  2 ** 32 - 1,
  2 ** 32,
  48850000000,
  30400000,
  1_795_651_201_000_000,
  1e15 + 7,
  2 ** 53 - 1,
  1e16 - 1,
  9_007_199_254_740_990,
];

t.test('integers are written as String(n)', async (t) => {
  for (const n of [...EDGES, 2 ** 53, 2 ** 60, 1.5, -1, NaN, Infinity])
    t.equal(
      written((w) => w.int(n)),
      String(n),
      `int(${n})`,
    );
});

t.test('decimals are written as decimalText(unscaled, scale)', async (t) => {
  let bad = 0;
  const check = (u: number, scale: number): void => {
    const want = decimalText(u, scale);
    const got = written((w) => w.decimal(u, scale));
    if (got !== want && bad++ < 20) t.equal(got, want, `decimal(${u}, ${scale})`);
  };
  for (let scale = 0; scale <= 12; scale++) {
    for (const u of EDGES) {
      check(u, scale);
      check(-u, scale);
    }
    check(NaN, scale);
  }
  let s = 12345;
  const next = (): number => (s = (Math.imul(s, 1103515245) + 12345) >>> 0);
  for (let k = 0; k < 20_000; k++) {
    const u = (next() % 1000) * 10 ** (next() % 9) + (next() % 7 === 0 ? next() * 4096 + (next() % 4096) : 0);
    check(u, [2, 6, 8][k % 3]);
  }
  t.equal(bad, 0, 'every value the same text');
});

t.test('a row head written once is copied for the rows after it', async (t) => {
  const text = written((w) => {
    w.text('x,');
    w.startHead();
    w.text('ab,');
    w.int(17);
    w.byte(44);
    w.endHead();
    w.text('r1\n');
    w.repeatHead();
    w.text('r2\n');
  });
  t.equal(text, 'x,ab,17,r1\nab,17,r2\n');
});

t.test('a taken buffer is reused only after the reader has consumed its bytes', async (t) => {
  let consumed = 0;
  const w = new TextOut(() => consumed);
  const pending: { chunk: Buffer; copy: string }[] = [];
  let allocations = 0;
  const seen = new Set<ArrayBufferLike>();
  let changed = 0;
  for (let row = 0; row < 200_000; row++) {
    w.int(row);
    w.text(',some cells of a row\n');
    if (!w.full) continue;
    const chunk = w.take()!;
    if (!seen.has(chunk.buffer)) allocations++;
    seen.add(chunk.buffer);
    pending.push({ chunk, copy: chunk.toString('latin1') });
    // The reader lags three chunks behind, and checks each chunk is intact when it reads it.
    while (pending.length > 3) {
      const p = pending.shift()!;
      if (p.chunk.toString('latin1') !== p.copy) changed++;
      consumed += p.chunk.length;
    }
  }
  t.equal(changed, 0, 'no chunk changed before it was consumed');
  t.ok(pending.length > 0 && allocations <= 6, `${allocations} buffers for ${seen.size} distinct, chunks reused`);
});
