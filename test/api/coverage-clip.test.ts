// clipCoverage: the books' gaps and covered intervals within [from, to), including the market whose
// feed was lost last (an open gap starting exactly where its recorded data ends).

import t from 'tap';
import { clipCoverage, GapScanner } from '../../src/api/query/coverage.js';

const iso = (ms: number): string => new Date(ms).toISOString();

t.test('an open gap that starts where the recorded data ends is listed as ongoing', async (t) => {
  const got = clipCoverage([{ start: 5_000, end: null, reason: 'disconnected' }], 1_000, 5_000);
  t.same(got.intervals, [{ start: iso(1_000), end: iso(5_000) }], 'covered up to the loss');
  t.same(got.gaps, [{ start: iso(5_000), end: null, reason: 'disconnected' }], "the loss is the market's state now");
});

t.test('a closed gap of no length at the end is not a gap', async (t) => {
  const got = clipCoverage([{ start: 5_000, end: 5_000, reason: 'stale' }], 1_000, 5_000);
  t.same(got.gaps, []);
  t.same(got.intervals, [{ start: iso(1_000), end: iso(5_000) }]);
});

t.test('gaps inside the range split the covered intervals; gaps outside are left out', async (t) => {
  const got = clipCoverage(
    [
      { start: 0, end: 500, reason: 'not_recording' },
      { start: 2_000, end: 3_000, reason: 'sequence_gap' },
      { start: 9_000, end: null, reason: 'disconnected' },
    ],
    1_000,
    6_000,
  );
  t.same(got.intervals, [
    { start: iso(1_000), end: iso(2_000) },
    { start: iso(3_000), end: iso(6_000) },
  ]);
  t.same(got.gaps, [{ start: iso(2_000), end: iso(3_000), reason: 'sequence_gap' }]);
});

t.test('the scanner keeps the last open gap open until a full book arrives', async (t) => {
  const recs = [
    { type: 'book', seq: 1, recv_ts: 1_000, source_ts: null, token_id: 'a', units: 'decimal', bids: [], asks: [] },
    { type: 'gap', seq: 2, recv_ts: 5_000, source_ts: null, reason: 'disconnected', start_ts: 5_000, end_ts: null },
  ];
  const reader = {
    seekSeq: async (s: number) => ({ day: 'd', offset: s, seq: s }),
    read: async function* (from: unknown) {
      const start = from === 'start' ? 1 : (from as { seq: number }).seq;
      for (const rec of recs) if (rec.seq >= start) yield { rec, pos: { day: 'd', offset: rec.seq, seq: rec.seq } };
    },
  };
  const g = new GapScanner();
  await g.update(reader as never);
  t.same(g.spans(), [{ start: 5_000, end: null, reason: 'disconnected' }]);
  t.same(clipCoverage(g.spans(), 1_000, 5_000).gaps, [{ start: iso(5_000), end: null, reason: 'disconnected' }]);
});
