// The k-way merge of /v3/replay: sorted sources come out as one sorted stream (ties by source),
// each source is pulled only as its head is taken, and stopping early or failing closes them all.

import t from 'tap';
import fc from 'fast-check';
import { mergeSorted } from '../../src/api/query/replay-merge.js';

type Item = { k: number; src: number; i: number };
const cmp = (a: Item, b: Item): number => a.k - b.k;

async function* from(xs: Item[], log?: string[], name = ''): AsyncGenerator<Item> {
  try {
    for (const x of xs) {
      log?.push(`${name} pull ${x.i}`);
      yield x;
    }
  } finally {
    log?.push(`${name} closed`);
  }
}

async function all<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
}

t.test('merges sorted sources into one sorted stream, ties by source index', async (t) => {
  await fc.assert(fc.asyncProperty(fc.array(fc.array(fc.integer({ min: 0, max: 20 }), { maxLength: 30 }), { maxLength: 8 }), async (lists) => {
    const sources = lists.map((l, src) => [...l].sort((a, b) => a - b).map((k, i) => ({ k, src, i })));
    const merged = await all(mergeSorted(sources.map((s) => from(s)), cmp));
    const expected = sources.flat().sort((a, b) => a.k - b.k || a.src - b.src || a.i - b.i);
    t.same(merged, expected);
  }), { numRuns: 200 });
});

t.test('pulls a source only when its head was taken', async (t) => {
  const log: string[] = [];
  const a = from([{ k: 1, src: 0, i: 0 }, { k: 5, src: 0, i: 1 }], log, 'a');
  const b = from([{ k: 2, src: 1, i: 0 }, { k: 3, src: 1, i: 1 }, { k: 4, src: 1, i: 2 }], log, 'b');
  const it = mergeSorted([a, b], cmp)[Symbol.asyncIterator]();
  t.equal((await it.next()).value?.k, 1);
  t.same(log, ['a pull 0', 'b pull 0'], 'one head per source before the first item');
  t.equal((await it.next()).value?.k, 2);
  t.same(log.slice(2), ['a pull 1'], 'taking a head pulls only that source');
});

t.test('stopping early closes every open source', async (t) => {
  const log: string[] = [];
  const srcs = [0, 1, 2].map((s) => from([0, 1, 2, 3].map((i) => ({ k: i * 3 + s, src: s, i })), log, `s${s}`));
  for await (const x of mergeSorted(srcs, cmp)) if (x.k >= 4) break;
  t.same(log.filter((l) => l.endsWith('closed')).sort(), ['s0 closed', 's1 closed', 's2 closed']);
});

t.test('a failing source ends the merge with its error and closes the others', async (t) => {
  const log: string[] = [];
  async function* bad(): AsyncGenerator<Item> {
    yield { k: 1, src: 1, i: 0 };
    throw new Error('disk on fire');
  }
  const good = from([{ k: 0, src: 0, i: 0 }, { k: 9, src: 0, i: 1 }], log, 'good');
  const got: number[] = [];
  await t.rejects(async () => {
    for await (const x of mergeSorted([good, bad()], cmp)) got.push(x.k);
  }, /disk on fire/);
  t.same(got, [0, 1]);
  t.ok(log.includes('good closed'));
});

t.test('no sources, or only empty ones, is an empty stream', async (t) => {
  t.same(await all(mergeSorted<Item>([], cmp)), []);
  t.same(await all(mergeSorted([from([]), from([])], cmp)), []);
});
