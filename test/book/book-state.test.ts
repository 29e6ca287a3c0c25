import t from 'tap';
import { MarketBooks, complement, mirrorLevels } from '../../src/book/book-state.js';

const base = { recv_ts: 1, source_ts: 1 } as const;

t.test('a delta before any snapshot is ignored, never applied to an empty book', async (t) => {
  const m = new MarketBooks();
  t.same(m.apply({ ...base, type: 'book_delta', token_id: 'A', changes: [{ side: 'bid', price: '0.5', size: '10' }] }), []);
  t.equal(m.view('A'), null);
  t.equal(m.droppedDeltas, 1);
});

t.test('snapshot then deltas give best-first ladders; size 0 removes a level; ".48" equals "0.48"', async (t) => {
  const m = new MarketBooks();
  m.apply({ ...base, type: 'book', token_id: 'A', units: 'decimal', bids: [['0.48', '5'], ['0.47', '3']], asks: [['0.52', '1']] });
  m.apply({ ...base, type: 'book_delta', token_id: 'A', changes: [{ side: 'bid', price: '.48', size: '0' }, { side: 'bid', price: '0.49', size: '2' }, { side: 'ask', price: '0.51', size: '4' }] });
  t.same(m.view('A'), { token_id: 'A', bids: [['0.49', '2'], ['0.47', '3']], asks: [['0.51', '4'], ['0.52', '1']] });
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
  t.same(mirrorLevels([['0.52', '10']], [['0.53', '7'], ['0.6', '1']]), { bids: [['0.47', '7'], ['0.4', '1']], asks: [['0.48', '10']] });
});
