import t from 'tap';
import { MarketBooks, complement, mirrorLevels } from '../../src/book/book-state.js';
import { rng } from '../api/helpers.js';

const base = { recv_ts: 1, source_ts: 1 } as const;

t.test('a delta before any snapshot is ignored, never applied to an empty book', async (t) => {
  const m = new MarketBooks();
  t.same(m.apply({ ...base, type: 'book_delta', token_id: 'A', changes: [{ side: 'bid', price: '0.5', size: '10' }] }), []);
  t.equal(m.view('A'), null);
  t.equal(m.droppedDeltas, 1);
});

t.test('snapshot then deltas give best-first ladders; size 0 removes a level; ".48" equals "0.48"', async (t) => {
  const m = new MarketBooks();
  m.apply({
    ...base,
    type: 'book',
    token_id: 'A',
    units: 'decimal',
    bids: [
      ['0.48', '5'],
      ['0.47', '3'],
    ],
    asks: [['0.52', '1']],
  });
  m.apply({
    ...base,
    type: 'book_delta',
    token_id: 'A',
    changes: [
      { side: 'bid', price: '.48', size: '0' },
      { side: 'bid', price: '0.49', size: '2' },
      { side: 'ask', price: '0.51', size: '4' },
    ],
  });
  t.same(m.view('A'), {
    token_id: 'A',
    bids: [
      ['0.49', '2'],
      ['0.47', '3'],
    ],
    asks: [
      ['0.51', '4'],
      ['0.52', '1'],
    ],
  });
  t.same(m.view('A', 1)?.bids, [['0.49', '2']]);
});

t.test('an open gap invalidates books until the next full book; a closed gap changes nothing', async (t) => {
  const m = new MarketBooks();
  m.apply({ ...base, type: 'book', token_id: 'A', units: 'decimal', bids: [['0.4', '1']], asks: [] });
  m.apply({ ...base, type: 'gap', reason: 'disconnected', start_ts: 2, end_ts: null });
  t.equal(m.view('A'), null, 'stale book is not served');
  m.apply({ ...base, type: 'book_delta', token_id: 'A', changes: [{ side: 'bid', price: '0.41', size: '1' }] });
  t.equal(m.view('A'), null, 'deltas after the gap do not revive it');
  m.apply({ ...base, type: 'book_checkpoint', units: 'decimal', books: [{ token_id: 'A', bids: [['0.3', '1']], asks: [] }] });
  t.same(m.view('A')?.bids, [['0.3', '1']]);
  m.apply({ ...base, type: 'gap', reason: 'disconnected', start_ts: 2, end_ts: 3 });
  t.ok(m.isValid('A'));
});

t.test('mirror swaps sides at 1 − p without floating-point noise', async (t) => {
  t.equal(complement('0.53'), '0.47');
  t.equal(complement('0.001'), '0.999');
  t.equal(complement('.3'), '0.7');
  t.same(
    mirrorLevels(
      [['0.52', '10']],
      [
        ['0.53', '7'],
        ['0.6', '1'],
      ],
    ),
    {
      bids: [
        ['0.47', '7'],
        ['0.4', '1'],
      ],
      asks: [['0.48', '10']],
    },
  );
});

t.test('ladders kept sorted through random deltas match a fresh sort; handed-out arrays are never changed', async (t) => {
  // A seeded generator: the same 3,000 deltas every run.
  const next = rng(12345);
  const rnd = (n: number): number => Math.floor(next() * n);
  const price = (): string => (rnd(2) ? `0.${String(rnd(99) + 1).padStart(2, '0')}` : `.${rnd(9) + 1}`); // ".5" and "0.50" are one level
  const fresh = (levels: Map<number, [string, string]>, dir: 1 | -1): [string, string][] =>
    [...levels.entries()].sort((a, b) => dir * (a[0] - b[0])).map((e) => e[1]);
  const m = new MarketBooks();
  m.apply({ ...base, type: 'book', token_id: 'A', units: 'decimal', bids: [], asks: [] });
  const want = { bid: new Map<number, [string, string]>(), ask: new Map<number, [string, string]>() };
  let mismatches = 0;
  let kept = 0;
  let changedSides = 0;
  for (let i = 0; i < 3000; i++) {
    const before = m.view('A')!;
    const frozen = { bids: JSON.stringify(before.bids), asks: JSON.stringify(before.asks) };
    const side = rnd(2) ? 'bid' : 'ask';
    const p = price();
    const size = rnd(4) === 0 ? '0' : String(rnd(500) + 1);
    if (size === '0') want[side].delete(Number(p));
    else want[side].set(Number(p), [p, size]);
    const wasBids = JSON.stringify(fresh(want.bid, -1));
    m.apply({ ...base, type: 'book_delta', token_id: 'A', changes: [{ side, price: p, size }] });
    const after = m.view('A')!;
    if (JSON.stringify(after.bids) !== wasBids || JSON.stringify(after.asks) !== JSON.stringify(fresh(want.ask, 1))) mismatches++;
    // The arrays handed out before the delta still say what they said.
    if (JSON.stringify(before.bids) !== frozen.bids || JSON.stringify(before.asks) !== frozen.asks)
      t.fail(`delta ${i} changed an array handed out before it`);
    // A side's array is new exactly when that side's levels changed.
    const other = side === 'bid' ? 'asks' : 'bids';
    if (after[other] !== before[other]) t.fail(`delta ${i} on the ${side} side made a new ${other} array`);
    const mine = side === 'bid' ? 'bids' : 'asks';
    const changed = JSON.stringify(after[mine]) !== JSON.stringify(before[mine]);
    if (changed) changedSides++;
    if (changed && after[mine] === before[mine]) t.fail(`delta ${i} changed the ${mine} but kept its array`);
    if (!changed && after[mine] === before[mine]) kept++;
  }
  t.equal(mismatches, 0, 'every ladder equals a fresh sort of the levels (3,000 deltas, both price spellings)');
  t.ok(
    changedSides > 2000 && kept > 0,
    `sides changed ${changedSides} times; ${kept} deltas that changed nothing (removing an absent level) kept the array`,
  );
  t.same(m.view('A', 3)?.bids, fresh(want.bid, -1).slice(0, 3), 'a depth cut is the first levels');
});
