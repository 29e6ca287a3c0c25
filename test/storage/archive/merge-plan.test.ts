// The merge's pure parts: covered intervals, one source per interval (kept while it covers, the
// first covering recorder after), merged gaps exactly where no recorder covers, and trades kept
// once by venue identity.

import t from 'tap';
import { coveredIntervals, mergedGaps, planSegments, sourceAt } from '../../../src/storage/merge/plan.js';
import { keptTrades } from '../../../src/storage/merge/market.js';
import type { Recorded, Trade } from '../../../src/schema/observation.js';

t.test('covered intervals: from the first whole book to the last record, minus gaps', async (t) => {
  t.same(
    coveredIntervals(10, 100, [
      { start: 20, end: 30 },
      { start: 25, end: 40 },
      { start: 90, end: 200 },
    ]),
    [
      { start: 10, end: 20 },
      { start: 40, end: 90 },
    ],
  );
  t.same(coveredIntervals(null, 100, []), [], 'never a whole book: nothing covered');
  t.same(coveredIntervals(50, 100, [{ start: 0, end: 60 }]), [{ start: 60, end: 100 }]);
});

t.test('segments: a source is kept while it covers; gaps only where nobody covers', async (t) => {
  const a = {
    id: 'a',
    covered: [
      { start: 0, end: 50 },
      { start: 70, end: 100 },
    ],
    gaps: [{ start: 50, end: 70, reason: 'not_recording' as const }],
  };
  const b = {
    id: 'b',
    covered: [
      { start: 10, end: 60 },
      { start: 65, end: 120 },
    ],
    gaps: [{ start: 60, end: 65, reason: 'disconnected' as const }],
  };
  const s = planSegments([a, b]);
  t.same(s, [
    { start: 0, end: 50, source: 'a' },
    { start: 50, end: 60, source: 'b' },
    { start: 60, end: 65, source: null, reason: 'not_recording' },
    { start: 65, end: 120, source: 'b' }, // b keeps it although a is back at 70
  ]);
  t.same(mergedGaps(s), [{ start: 60, end: 65 }], "the merged gap is the intersection of both recorders' gaps");
  t.equal(sourceAt(s, 55), 'b');
  t.equal(sourceAt(s, 62), null);
  t.equal(sourceAt(s, 500), null);
  t.same(
    planSegments([b, a])[0],
    { start: 0, end: 50, source: 'a' },
    'a (the only one at the start) is kept while it covers, priority aside',
  );
  t.same(planSegments([]), []);
});

t.test("trades: one copy per venue identity, the source's; two real fills alike stay two", async (t) => {
  const tr = (recv: number, extra: Partial<Trade> = {}): Recorded<Trade> => ({
    type: 'trade',
    recv_ts: recv,
    source_ts: 1000,
    token_id: 'x',
    price: '0.5',
    size: '10',
    side: 'buy',
    seq: recv,
    ...extra,
  });
  const segments = [
    { start: 0, end: 100, source: 'a' },
    { start: 100, end: 200, source: 'b' },
  ];
  const a = [tr(10), tr(11), tr(150, { source_ts: 2000 })];
  const b = [tr(12), tr(13), tr(151, { source_ts: 2000 }), tr(152, { source_ts: 3000 }), tr(160, { source_ts: null })];
  const out = keptTrades(
    new Map([
      ['a', a],
      ['b', b],
    ]),
    segments,
    ['a', 'b'],
  );
  t.same(
    out.map((x) => [x.recv_ts, x.recorder]),
    [
      [10, 'a'],
      [11, 'a'],
      [151, 'b'],
      [152, 'b'],
      [160, 'b'],
    ],
  );
});
