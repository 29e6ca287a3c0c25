// The Python client (clients/python/pmtape_client.py, standard library only) against a real
// `pmtape serve`: every generator equals the HTTP answers, replay equals the raw stream and survives a
// dropped connection, 429s are waited out, errors carry the envelope. It runs twice, in the python
// toolchain's two venvs (tools/toolchains/python.ts), never in whatever python3 the machine has: WITH
// pandas to_dataframe gives flatten's rows (one per outcome book) as a DataFrame; WITHOUT it the module
// still works and to_dataframe says what it needs. Each branch used to run only on machines that
// happened to have (or lack) pandas, so the pandas one went unchecked.

import t from 'tap';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { keysFor, tmpDataDir, walletMarket, yesnoMarket } from '../api/helpers.js';
import { coinMarket2, iso, seedReplay, T0 } from '../api/replay-helpers.js';
import { cuttingProxy, here, rawApi, startServe } from './serve-helpers.js';
import { requireTool } from '../helpers/toolchains.js';
import { pythonIn, type Venv } from '../../tools/toolchains/python.js';

const REPO = join(here, '..', '..', '..');
const A = '540817';

t.test('the Python client against a real serve', async (t) => {
  const venvs = requireTool(t, 'python');
  if (venvs === null) return;
  const dir = tmpDataDir(t);
  await seedReplay(dir);
  const keys = await keysFor(dir);
  const base = await startServe(t, dir);
  const limited = await startServe(t, dir, { PMTAPE_RATE_LIMITS: 'free=3/s,paid=3/s' });
  const { raw, rawPages } = rawApi(base, keys.paid);
  const types = ['book', 'book_change', 'trade', 'gap', 'book_snapshot_5_1s'];
  const replayPath = `/v3/replay?family=coin&market_id=${A},${coinMarket2.market_id}&start_time=${iso(T0)}&end_time=${iso(T0 + 120_000)}&types=${types.join(',')}`;
  const replayText = await (await fetch(base + replayPath, { headers: { authorization: `Bearer ${keys.paid}` } })).text();
  const rowsBody = Buffer.from(
    await (
      await fetch(
        `${base}/v3/datasets/rows?family=coin&dataset=book_changes&market_id=${A}&start_time=${iso(T0)}&end_time=${T0 + 120_000}`,
        { headers: { authorization: `Bearer ${keys.paid}` } },
      )
    ).arrayBuffer(),
  );
  for (const venv of ['pandas', 'bare'] as Venv[])
    await t.test(`in the ${venv} venv`, async (t) => {
      const proxy = await cuttingProxy(t, base, Math.floor(replayText.length / 2));
      const rowsProxy = await cuttingProxy(t, base, Math.floor(rowsBody.length / 2));
      const params = {
        a: A,
        b: coinMarket2.market_id,
        ticker: yesnoMarket.ticker,
        wallet: walletMarket.market_id,
        start: iso(T0),
        end: T0 + 120_000,
        as_of: T0 + 30_000,
        types,
        rows_proxy: rowsProxy.url,
      };
      const { stdout } = await promisify(execFile)(
        pythonIn(venvs, venv),
        [
          join(REPO, 'test', 'client', 'python_client_run.py'),
          join(REPO, 'clients', 'python'),
          base,
          keys.paid,
          keys.free,
          proxy.url,
          limited,
          JSON.stringify(params),
        ],
        { maxBuffer: 64e6 },
      );
      const got = JSON.parse(stdout);
      t.equal(got.has_pandas, venv === 'pandas', `the ${venv} venv ${venv === 'pandas' ? 'has' : 'lacks'} pandas`);

      t.same(got.markets.sort(), [A, coinMarket2.market_id].sort(), 'markets over pages of one');
      t.same(
        got.snapshots,
        await rawPages(`/v3/btc/markets/${A}/snapshots?include_orderbook=true&limit=1000&start_time=${iso(T0)}&end_time=${T0 + 120_000}`),
      );
      t.ok(got.snapshots.length > 300);
      t.same(got.yesno, await rawPages(`/v3/yesno-exchange/${yesnoMarket.ticker}/snapshots?limit=1000`));
      t.same(got.timeseries, await rawPages(`/v3/wallet-prediction/${walletMarket.market_id}/timeseries?metric=chance&limit=1000`));
      t.same(got.coverage, [(await raw(`/v3/coverage?market_id=${A}`)).data]);
      t.same(
        got.latest,
        (await raw(`/v3/wallet-prediction/${walletMarket.market_id}/orderbook/latest?as_of=${T0 + 30_000}&outcome=Down`)).data,
      );

      t.equal(got.rows_hex, rowsBody.toString('hex'), `dataset_rows: the bytes of the route (${rowsBody.length})`);
      t.ok(rowsBody.length > 10_000);
      t.match(got.rows_cut, ['cut_off', /cut off/], 'a rows body cut in half raises');
      t.equal(rowsProxy.cuts(), 1);

      const lines = replayText
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l));
      const end = lines.pop();
      t.equal(JSON.stringify(got.replay), JSON.stringify(lines), `replay: ${lines.length} lines as the raw stream`);
      t.equal(got.replay_next, end.next, 'the generator returns the end token');
      t.equal(proxy.cuts(), 1, 'the proxied replay was cut once');
      t.equal(JSON.stringify(got.replay_proxy), JSON.stringify(lines), 'resumed after the dropped connection: the same lines');
      t.equal(got.replay_proxy_next, end.next);
      t.same(got.tail, [], 'after the end token: nothing more');

      t.match(got.errors.not_found, [404, 'not_found', /nope/, /\S/]);
      t.same(got.errors.plan, [403, 'plan_required']);
      t.match(got.errors.bad_type, [400, 'invalid_parameter', /candles/]);
      t.equal(got.limited.length, 8, 'eight calls through a 3/s limit all answered');
      t.match(await (await fetch(`${limited}/metrics`)).text(), /status="429"\} [1-9]/, 'the server did answer 429 on the way');

      const firstBook = lines.find((l) => l.type === 'book');
      const row = got.flatten.find((r: any) => r.seq === firstBook.seq && r.type === 'book');
      const bids = firstBook.data.books[0].bids;
      const asks = firstBook.data.books[0].asks;
      t.match(row, { market_id: firstBook.market_id, outcome: 'Up', best_bid: bids[0][0], best_ask: asks[0][0] });
      t.ok(
        Math.abs(row.mid - (bids[0][0] + asks[0][0]) / 2) < 1e-12 &&
          Math.abs(row.bid_depth - bids.reduce((s: number, l: number[]) => s + l[1], 0)) < 1e-9,
      );
      const yesRow = got.flatten.find((r: any) => r.market_id === yesnoMarket.ticker);
      const yb = got.yesno_books[0];
      t.match(yesRow, { seq: yb.seq, outcome: 'Yes', best_bid: Number(yb.yes.prices[0]) });
      t.ok(Math.abs(yesRow.best_ask - (1 - Number(yb.no.prices[0]))) < 1e-12, 'the YES ask is 1 - the best NO bid');
      if (venv === 'pandas') {
        // to_dataframe is flatten as a DataFrame: one row per outcome book of each book line (its docstring).
        const books = lines.filter((l) => l.type === 'book' || l.type.startsWith('book_snapshot_'));
        const outcomeBooks = books.reduce((n, l) => n + l.data.books.length, 0);
        t.ok(
          outcomeBooks > books.length,
          `the replay's book lines hold several outcome books each (${books.length} lines, ${outcomeBooks} books)`,
        );
        t.equal(got.dataframe_rows, outcomeBooks, 'with pandas: to_dataframe has one row per outcome book, as flatten');
        t.same(got.dataframe_first, got.flatten_first, "its first row is flatten's (times aside)");
        t.match(got.dataframe_time_dtype, /^datetime64\[\w+, UTC\]$/, 'receive_time parsed as UTC');
      } else t.match(got.dataframe_error, /needs pandas/, 'without pandas: the module works, to_dataframe says what it needs');
    });
});
