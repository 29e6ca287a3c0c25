// The datasets page's pyarrow block (`<!-- python:rebuild-books -->`) rebuilds books from a real
// compacted `book_changes` tree with the rule "one batch is one (seq, token_id) record", and gets
// the books the records make; the Tardis rule (reset when is_snapshot flips to true) does not on
// the same rows, because full books come back to back. Run by pyarrow from the interpreter
// the `pandas` venv of the python toolchain (tools/toolchains/python.ts, which pins pyarrow); without
// it the test is skipped, except under CI where it fails (test/helpers/toolchains.ts).

import t from 'tap';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { compactDay } from '../../src/storage/compaction/compact-day.js';
import { MarketBooks } from '../../src/book/book-state.js';
import type { Observation } from '../../src/schema/observation.js';
import { catalog, coinMarket, T0, tmpDataDir, writeLog } from '../api/helpers.js';
import { REPO } from '../selfhost/helpers.js';
import { requireTool } from '../helpers/toolchains.js';
import { pythonIn } from '../../tools/toolchains/python.js';

function docBlock(): string {
  const page = readFileSync(join(REPO, 'docs', 'datasets.md'), 'utf8');
  const m = /<!-- python:rebuild-books -->\s*```python\n([\s\S]*?)```/.exec(page);
  if (!m) throw new Error('docs/datasets.md has no <!-- python:rebuild-books --> block');
  return m[1];
}

const lv = (p: string, s: string): [string, string] => [p, s];
/** Back-to-back full books (a venue book, its checkpoint, a new book with fewer levels), then deltas. */
function records(): Observation[] {
  const book = (tok: string, t: number, bids: [string, string][]): Observation => ({
    type: 'book',
    token_id: tok,
    units: 'decimal',
    bids,
    asks: [lv('0.60', '5')],
    recv_ts: t,
    source_ts: t,
  });
  return [
    book('1111', T0, [lv('0.40', '10'), lv('0.39', '20'), lv('0.38', '30')]),
    book('2222', T0, [lv('0.50', '1')]),
    {
      type: 'book_checkpoint',
      recv_ts: T0 + 1,
      source_ts: null,
      origin: 'recorder',
      units: 'decimal',
      books: [
        { token_id: '1111', bids: [lv('0.40', '10'), lv('0.39', '20'), lv('0.38', '30')], asks: [lv('0.60', '5')] },
        { token_id: '2222', bids: [lv('0.50', '1')], asks: [lv('0.60', '5')] },
      ],
    },
    book('1111', T0 + 1000, [lv('0.41', '7')]),
    { type: 'book_delta', token_id: '1111', changes: [{ side: 'bid', price: '0.35', size: '3' }], recv_ts: T0 + 2000, source_ts: null },
    { type: 'tick_size', token_id: '1111', old_tick_size: '0.01', new_tick_size: '0.001', recv_ts: T0 + 2500, source_ts: null },
    book('2222', T0 + 3000, [lv('0.52', '2'), lv('0.51', '4')]),
    { type: 'book_delta', token_id: '2222', changes: [{ side: 'bid', price: '0.52', size: '0' }], recv_ts: T0 + 4000, source_ts: null },
  ];
}

t.test('the documented pyarrow rebuild gives the books the records make; the Tardis reset rule does not', async (t) => {
  const venvs = requireTool(t, 'python');
  if (venvs === null) return;
  const python = pythonIn(venvs, 'pandas');
  const dir = tmpDataDir(t);
  const recs = records();
  await writeLog(dir, 'coin', 'catalog', coinMarket.market_id, [catalog(coinMarket, T0 - 60_000)]);
  await writeLog(dir, 'coin', 'books', coinMarket.market_id, recs);
  await compactDay(dir, '2026-07-26');

  const script = `MARKET = ${JSON.stringify(coinMarket.market_id)}\n${docBlock()}
import json
print(json.dumps({tok: sorted([s, str(p), str(z)] for (s, p), z in b.items()) for tok, b in books.items()}))
# the Tardis rule on the same rows: reset only when is_snapshot flips to true
tb, prev = {}, False
for r in t.sort_by([('receive_time', 'ascending'), ('seq', 'ascending')]).to_pylist():
    if r['record_type'] == 'tick_size': continue
    if r['is_snapshot'] and not prev: tb[r['token_id']] = {}
    prev = r['is_snapshot']
    b = tb.setdefault(r['token_id'], {})
    if r['price'] is not None and r['size'] != 0: b[(r['side'], r['price'])] = r['size']
    elif r['price'] is not None: b.pop((r['side'], r['price']), None)
print(json.dumps({tok: sorted([s, str(p), str(z)] for (s, p), z in b.items()) for tok, b in tb.items()}))
`;
  const { stdout } = await promisify(execFile)(python, ['-c', script], { cwd: dir });
  const [documented, tardis] = stdout
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, string[][]>);

  const mb = new MarketBooks();
  for (const r of recs) mb.apply({ ...r, seq: 0 } as never);
  const dec = (x: string): string => Number(x).toFixed(8);
  const want: Record<string, string[][]> = {};
  for (const tok of ['1111', '2222']) {
    const v = mb.view(tok)!;
    want[tok] = [...v.bids.map(([p, s]) => ['bid', dec(p), dec(s)]), ...v.asks.map(([p, s]) => ['ask', dec(p), dec(s)])].sort();
  }
  t.same(documented, want, 'the documented rule rebuilds every book');
  t.notSame(tardis, want, 'the Tardis reset rule keeps levels a back-to-back full book removed');
});
