// The k-way merge of /v3/replay: sorted sources, handed out in batches, come out as one sorted
// stream (ties by source, whatever the batch boundaries), each source is pulled only when its batch
// was used up, a sink's promise pauses the merge, and stopping early or failing closes them all.

import t from 'tap';
import fc from 'fast-check';
import { mergeSorted } from '../../src/api/replay/merge.js';

type Item = { k: number; src: number; i: number };
const cmp = (a: Item, b: Item): number => a.k - b.k;

async function* from(batches: Item[][], log?: string[], name = ''): AsyncGenerator<Item[]> {
  try {
    for (const [n, b] of batches.entries()) {
      log?.push(`${name} pull ${n}`);
      yield b;
    }
  } finally {
    log?.push(`${name} closed`);
  }
}

/** `xs` cut into batches of the given sizes, cycled (0 makes an empty batch; all zeros: one each). */
function cut(xs: Item[], sizes: number[]): Item[][] {
  if (!sizes.some((n) => n > 0)) return xs.map((x) => [x]);
  const out: Item[][] = [];
  for (let i = 0, j = 0; i < xs.length; j++) {
    const n = sizes[j % sizes.length];
    out.push(xs.slice(i, i + n));
    i += n;
  }
  return out;
}

async function all(sources: AsyncIterable<Item[]>[]): Promise<Item[]> {
  const out: Item[] = [];
  t.equal(await mergeSorted(sources, cmp, (x) => (out.push(x), true)), true, 'ran to the end');
  return out;
}

t.test('merges sorted sources into one sorted stream, ties by source index, whatever the batches', async (t) => {
  const batchSizes = fc.array(fc.integer({ min: 0, max: 5 }), { maxLength: 4 });
  await fc.assert(
    fc.asyncProperty(
      fc.array(fc.tuple(fc.array(fc.integer({ min: 0, max: 20 }), { maxLength: 30 }), batchSizes), { maxLength: 8 }),
      fc.boolean(),
      async (lists, slowSink) => {
        const sources = lists.map(([l], src) => [...l].sort((a, b) => a - b).map((k, i) => ({ k, src, i })));
        const out: Item[] = [];
        const sink = (x: Item): boolean | Promise<boolean> => {
          out.push(x);
          return slowSink && out.length % 3 === 0 ? new Promise((ok) => setImmediate(() => ok(true))) : true;
        };
        t.equal(
          await mergeSorted(
            sources.map((s, src) => from(cut(s, lists[src][1]))),
            cmp,
            sink,
          ),
          true,
        );
        t.same(
          out,
          sources.flat().sort((a, b) => a.k - b.k || a.src - b.src || a.i - b.i),
        );
      },
    ),
    { numRuns: 200 },
  );
});

t.test('pulls a source only when its batch was used up', async (t) => {
  const log: string[] = [];
  const a = from([[{ k: 1, src: 0, i: 0 }], [{ k: 5, src: 0, i: 1 }]], log, 'a');
  const b = from(
    [
      [
        { k: 2, src: 1, i: 0 },
        { k: 3, src: 1, i: 1 },
      ],
      [{ k: 4, src: 1, i: 2 }],
    ],
    log,
    'b',
  );
  const seen: string[] = [];
  await mergeSorted([a, b], cmp, (x) => {
    seen.push(`${x.k} after ${log.join(', ')}`);
    return true;
  });
  t.same(
    seen,
    [
      '1 after a pull 0, b pull 0',
      '2 after a pull 0, b pull 0, a pull 1',
      '3 after a pull 0, b pull 0, a pull 1',
      '4 after a pull 0, b pull 0, a pull 1, b pull 1',
      '5 after a pull 0, b pull 0, a pull 1, b pull 1, b closed',
    ],
    "one batch per source before the first item; a source is pulled again after its batch's last item was taken",
  );
});

t.test('a sink that says stop (at once or through its promise) ends the merge and closes every open source', async (t) => {
  for (const later of [false, true]) {
    const log: string[] = [];
    const srcs = [0, 1, 2].map((s) =>
      from(
        [0, 1, 2, 3].map((i) => [{ k: i * 3 + s, src: s, i }]),
        log,
        `s${s}`,
      ),
    );
    const got: number[] = [];
    const ran = await mergeSorted(srcs, cmp, (x) => {
      got.push(x.k);
      return x.k < 4 || (later ? Promise.resolve(false) : false);
    });
    t.equal(ran, false);
    t.same(got, [0, 1, 2, 3, 4]);
    t.same(log.filter((l) => l.endsWith('closed')).sort(), ['s0 closed', 's1 closed', 's2 closed']);
  }
});

t.test('a failing source ends the merge with its error, after the items merged before it, and closes the others', async (t) => {
  const log: string[] = [];
  async function* bad(): AsyncGenerator<Item[]> {
    yield [{ k: 1, src: 1, i: 0 }];
    throw new Error('disk on fire');
  }
  const good = from([[{ k: 0, src: 0, i: 0 }], [{ k: 9, src: 0, i: 1 }]], log, 'good');
  const got: number[] = [];
  await t.rejects(
    mergeSorted([good, bad()], cmp, (x) => (got.push(x.k), true)),
    /disk on fire/,
  );
  t.same(got, [0, 1]);
  t.ok(log.includes('good closed'));
});

t.test('no sources, or only empty ones, is an empty stream', async (t) => {
  t.same(await all([]), []);
  t.same(await all([from([]), from([[], []])]), []);
});
