// The backtesting engines researchers already use, run unchanged on a pmtape day (issue 38 §2): a
// compacted sim day exported by `pmtape export tardis`, then
// - NautilusTrader 1.221.0: TardisCSVDataLoader loads the files and a BacktestEngine (L2_MBP book,
//   fill model) runs a market-making strategy over the day: it completes with fills, and the book the
//   strategy saw at 50 instants equals the API's book as of each instant, level by level;
// - hftbacktest 2.4.4: tardis.convert turns the files into its events and a backtest with a queue
//   model runs a quoting strategy: it completes with orders, and its book at 10 instants equals the API's.
// Both scripts are tools/engines/*.py (docs/engines.md); the instrument comes from the catalogue
// (tick size) and the data (size decimals). The venvs come from tools/toolchains/python.ts.

import t, { type Test } from 'tap';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { promisify } from 'node:util';
import { requireTool } from '../helpers/toolchains.js';
import { REPO } from '../selfhost/helpers.js';
import {
  apiBook,
  canon,
  liveliestBook,
  quietInstants,
  recordSimDay,
  tardisFile,
  type Levels,
  type SimBook,
  type SimDay,
} from '../helpers/sim-day.js';

t.setTimeout(1_800_000);

interface EngineRun {
  orders: number;
  fills: number;
  books: { t_us: number; bids: Levels; asks: Levels }[];
  [k: string]: unknown;
}

async function runEngine(python: string, script: string, args: string[]): Promise<EngineRun> {
  const { stdout } = await promisify(execFile)(python, [join(REPO, 'tools', 'engines', script), ...args], {
    maxBuffer: 256e6,
    timeout: 900_000,
  });
  // hftbacktest's convert prints progress lines first; the result is the last line.
  return JSON.parse(stdout.trim().split('\n').at(-1)!) as EngineRun;
}

async function sameBooks(t: Test, sd: SimDay, bk: SimBook, instants: number[], run: EngineRun): Promise<void> {
  t.equal(run.books.length, instants.length, `the strategy recorded a book at each of the ${instants.length} instants`);
  let levels = 0;
  for (const [i, seen] of run.books.entries()) {
    t.equal(seen.t_us, instants[i], `book ${i} is the one at its instant`);
    const api = await apiBook(sd, bk, seen.t_us);
    levels += api.bids.length + api.asks.length;
    t.same(
      { bids: canon(seen.bids), asks: canon(seen.asks) },
      api,
      `book at ${new Date(seen.t_us / 1000).toISOString()} equals the API's as_of`,
    );
  }
  t.ok(levels > instants.length * 2, `the books compared are not empty (${levels} levels)`);
}

let day: Promise<SimDay> | null = null;
const simDay = (): Promise<SimDay> => (day ??= recordSimDay(t, 600));

t.test('NautilusTrader: TardisCSVDataLoader + BacktestEngine (L2_MBP, fill model) over a pmtape day', async (t) => {
  const python = requireTool(t, 'nautilus');
  if (python === null) return;
  const sd = await simDay();
  const bk = await liveliestBook(sd, 50);
  const instants = quietInstants(bk.file, 50);
  const tick = String(bk.market.native.orderPriceMinTickSize);
  t.match(tick, /^0\.0*1$/, `the catalogue gives the tick size (${tick})`);
  const run = await runEngine(python, 'nautilus_backtest.py', [
    '--book',
    bk.file,
    '--trades',
    tardisFile(sd, 'trades', bk),
    '--tick-size',
    tick,
    '--outcome',
    bk.outcome,
    '--question',
    bk.market.question,
    '--instants',
    instants.join(','),
  ]);
  t.equal(run.price_precision, tick.split('.')[1].length, 'price precision from the tick size');
  t.ok((run.batches as number) > 50 && run.batches_seen === run.batches, `the strategy saw every batch (${String(run.batches)})`);
  t.ok(run.orders > 0, `orders placed (${run.orders})`);
  t.ok(run.fills > 0, `fills (${run.fills})`);
  await sameBooks(t, sd, bk, instants, run);
});

t.test('hftbacktest: tardis.convert + a queue-model backtest over a pmtape day', async (t) => {
  const python = requireTool(t, 'hftbacktest');
  if (python === null) return;
  const sd = await simDay();
  const bk = await liveliestBook(sd, 50);
  const instants = quietInstants(bk.file, 10);
  const run = await runEngine(python, 'hftbacktest_backtest.py', [
    '--book',
    bk.file,
    '--trades',
    tardisFile(sd, 'trades', bk),
    '--tick-size',
    String(bk.market.native.orderPriceMinTickSize),
    '--queue',
    'risk_adverse',
    '--instants',
    instants.join(','),
  ]);
  t.ok((run.events as number) > 0, `convert made events (${String(run.events)})`);
  t.ok(run.orders > 0, `orders placed (${run.orders}); fills: ${run.fills}`);
  await sameBooks(t, sd, bk, instants, run);
});

/**
 * A hand-written day where a second snapshot has fewer levels than the book before it, and a third
 * more than the second: both engines' loaders left the old deeper levels in place after the second
 * (NautilusTrader's makes snapshot rows `Add`s with no Clear; hftbacktest's convert clears only down
 * to the snapshot's deepest price), and hftbacktest's kept only as many levels of the third as the
 * first snapshot had. The scripts restart the book at each, as Tardis's rule and pmtape's API do.
 */
t.test('each snapshot, smaller or larger than the book before, restarts the book in both engines', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'pmtape-engines-snap-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const T = 1_785_000_000_000_000;
  const rows: [number, boolean, string, string, string][] = [
    [T, true, 'bid', '0.40', '100'],
    [T, true, 'bid', '0.39', '50'],
    [T, true, 'ask', '0.45', '80'],
    [T, true, 'ask', '0.46', '20'],
    [T + 1000, false, 'bid', '0.38', '10'],
    [T + 2000, true, 'bid', '0.41', '7'],
    [T + 2000, true, 'ask', '0.44', '8'],
    [T + 3000, false, 'ask', '0.47', '2'],
    [T + 4000, true, 'bid', '0.30', '1'],
    [T + 4000, true, 'bid', '0.29', '2'],
    [T + 4000, true, 'bid', '0.28', '3'],
    [T + 4000, true, 'ask', '0.50', '4'],
    [T + 4000, true, 'ask', '0.51', '5'],
    [T + 4000, true, 'ask', '0.52', '6'],
    [T + 5000, false, 'ask', '0.53', '2'],
  ];
  const csv = [
    'exchange,symbol,timestamp,local_timestamp,is_snapshot,side,price,amount',
    ...rows.map(([ts, s, side, p, a]) => `pmtape-clob,M1-UP,${ts},${ts},${s},${side},${p},${a}`),
  ];
  const book = join(dir, 'pmtape-clob_incremental_book_L2_2026-07-25_M1-UP.csv.gz');
  writeFileSync(book, gzipSync(`${csv.join('\n')}\n`));
  const instants = [T + 1500, T + 2500, T + 4500];
  const want = [
    {
      t_us: T + 1500,
      bids: [
        ['0.4', '100'],
        ['0.39', '50'],
        ['0.38', '10'],
      ],
      asks: [
        ['0.45', '80'],
        ['0.46', '20'],
      ],
    },
    { t_us: T + 2500, bids: [['0.41', '7']], asks: [['0.44', '8']] },
    {
      t_us: T + 4500,
      bids: [
        ['0.3', '1'],
        ['0.29', '2'],
        ['0.28', '3'],
      ],
      asks: [
        ['0.5', '4'],
        ['0.51', '5'],
        ['0.52', '6'],
      ],
    },
  ];
  for (const [tool, script] of [
    ['nautilus', 'nautilus_backtest.py'],
    ['hftbacktest', 'hftbacktest_backtest.py'],
  ] as const) {
    const python = requireTool(t, tool);
    if (python === null) continue;
    const run = await runEngine(python, script, ['--book', book, '--tick-size', '0.01', '--instants', instants.join(',')]);
    t.same(
      run.books.map((b) => ({ t_us: b.t_us, bids: canon(b.bids), asks: canon(b.asks) })),
      want,
      `${tool}: the book after the second snapshot is that snapshot`,
    );
  }
});
