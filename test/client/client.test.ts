// The TypeScript client `pmtape/client` against a real `pmtape serve`: paged iterators equal the
// pages fetched by hand, replay equals the raw stream and survives a dropped connection, 429s are
// waited out, errors carry the envelope, the live stream yields REST-shaped books, and the package
// name resolves from another folder's node_modules with its type declarations.

import t from 'tap';
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { tableFromIPC } from 'apache-arrow';
import { Client, PmtapeError } from 'pmtape/client';
import { keysFor, tmpDataDir, walletMarket, yesnoMarket } from '../api/helpers.js';
import { coinMarket2, iso, seedReplay, T0 } from '../api/replay-helpers.js';
import { cuttingProxy, here, rawApi, startServe } from './serve-helpers.js';

const A = '540817';
const RANGE = `start_time=${iso(T0)}&end_time=${iso(T0 + 120_000)}`;

async function all<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
}

t.test('client', async (t) => {
  const dir = tmpDataDir(t);
  await seedReplay(dir);
  const keys = await keysFor(dir);
  const base = await startServe(t, dir);
  const client = new Client({ baseUrl: base, apiKey: keys.paid });
  const { raw, rawPages } = rawApi(base, keys.paid);

  t.test('paged routes follow next_cursor', async (t) => {
    t.same((await all(client.markets({ family: 'coin', coin: 'btc' }))).map((m) => m.market_id).sort(), [coinMarket2.market_id, A].sort());
    const snaps = await all(
      client.snapshots({
        family: 'coin',
        coin: 'btc',
        marketId: A,
        startTime: T0,
        endTime: new Date(T0 + 120_000),
        includeOrderbook: true,
        limit: 37,
      }),
    );
    t.ok(snaps.length > 300, `${snaps.length} snapshots over ${Math.ceil(snaps.length / 37)} pages`);
    t.same(snaps, await rawPages(`/v3/btc/markets/${A}/snapshots?include_orderbook=true&limit=1000&${RANGE}`));
    const yes = await all(client.snapshots({ family: 'yesno-exchange', ticker: yesnoMarket.ticker, limit: 7 }));
    t.same(yes, await rawPages(`/v3/yesno-exchange/${yesnoMarket.ticker}/snapshots?limit=1000`));
    const ts = await all(client.timeseries({ marketId: walletMarket.market_id, metric: 'price', limit: 4 }));
    t.same(ts, await rawPages(`/v3/wallet-prediction/${walletMarket.market_id}/timeseries?metric=price&limit=1000`));
    t.ok(ts.length > 10);
    const cov = await all(client.coverage({ family: 'coin' }));
    t.same(cov.map((c) => c.market_id).sort(), [coinMarket2.market_id, A].sort());
    const one = await all(client.coverage({ marketId: A }));
    t.same(one, [(await raw(`/v3/coverage?market_id=${A}`)).data]);
    t.same(await all(client.datasets()), (await raw('/v3/datasets')).data);
    t.same(
      await client.latest({ family: 'coin', coin: 'btc', marketId: A, depth: 2 }),
      (await raw(`/v3/btc/markets/${A}/orderbook/latest?depth=2`)).data,
    );
    t.same(
      await client.latest({ family: 'wallet-prediction', marketId: walletMarket.market_id, asOf: T0 + 30_000, outcome: 'Down' }),
      (await raw(`/v3/wallet-prediction/${walletMarket.market_id}/orderbook/latest?as_of=${T0 + 30_000}&outcome=Down`)).data,
    );
  });

  t.test('errors are PmtapeError with the envelope', async (t) => {
    const err = await all(client.snapshots({ family: 'coin', coin: 'btc', marketId: 'nope' })).catch((e: unknown) => e);
    t.ok(err instanceof PmtapeError);
    t.match(err, { status: 404, code: 'not_found', message: /nope/, requestId: /\S/ });
    const free = new Client({ baseUrl: base, apiKey: keys.free });
    t.match(await free.latest({ family: 'wallet-prediction', marketId: walletMarket.market_id }).catch((e: unknown) => e), {
      status: 403,
      code: 'plan_required',
    });
    t.match(await all(free.replay({ family: 'coin', marketIds: [A], startTime: T0, types: ['candles'] })).catch((e: unknown) => e), {
      status: 400,
      code: 'invalid_parameter',
      message: /candles/,
    });
  });

  t.test('replay yields the raw stream and resumes after a dropped connection', async (t) => {
    const path = `/v3/replay?family=coin&market_id=${A},${coinMarket2.market_id}&${RANGE}&types=book,book_change,trade,gap,book_snapshot_5_1s`;
    const text = await (await fetch(base + path, { headers: { authorization: `Bearer ${keys.paid}` } })).text();
    const lines = text
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    // Compared as JSON text: a deep compare of ~2k nested lines costs tap a minute on a busy machine.
    const end = lines.pop();
    const params = {
      family: 'coin' as const,
      marketIds: [A, coinMarket2.market_id],
      startTime: iso(T0),
      endTime: T0 + 120_000,
      types: ['book', 'book_change', 'trade', 'gap', 'book_snapshot_5_1s'],
    };
    const direct = client.replay(params);
    t.equal(JSON.stringify(await all(direct)), JSON.stringify(lines), `${lines.length} lines`);
    t.equal(direct.next, end.next, 'the end token');
    const proxy = await cuttingProxy(t, base, Math.floor(text.length / 3));
    const resumed = new Client({ baseUrl: proxy.url, apiKey: keys.paid }).replay(params);
    t.equal(JSON.stringify(await all(resumed)), JSON.stringify(lines), 'the same lines through a connection cut at a third');
    t.equal(proxy.cuts(), 1, 'the connection was cut once');
    t.equal(resumed.next, end.next);
    const tail = await all(client.replay({ ...params, after: direct.next! }));
    t.same(tail, [], 'after the end token: nothing more');
  });

  t.test('datasetRows returns the Arrow IPC stream, and refuses one cut off', async (t) => {
    const params = { family: 'coin' as const, dataset: 'book_changes' as const, marketId: A, startTime: iso(T0), endTime: T0 + 120_000 };
    const path = `/v3/datasets/rows?family=coin&dataset=book_changes&market_id=${A}&${RANGE}`;
    const direct = Buffer.from(await (await fetch(base + path, { headers: { authorization: `Bearer ${keys.paid}` } })).arrayBuffer());
    const bytes = await client.datasetRows(params);
    t.ok(Buffer.from(bytes).equals(direct), `the bytes of the route (${bytes.length})`);
    t.ok(tableFromIPC(bytes).numRows > 100, `${tableFromIPC(bytes).numRows} rows`);
    t.match(await client.datasetRows({ ...params, marketId: 'nope' }).catch((e: unknown) => e), { status: 404, code: 'not_found' });
    const proxy = await cuttingProxy(t, base, Math.floor(direct.length / 2));
    const cut = await new Client({ baseUrl: proxy.url, apiKey: keys.paid }).datasetRows(params).catch((e: unknown) => e);
    t.match(cut, { message: /cut off/ }, 'a body cut in half is an error, not a short table');
    t.equal(proxy.cuts(), 1);
  });

  t.test('the live stream yields the REST snapshot objects', async (t) => {
    const live = client.stream({ family: 'coin', coin: 'btc', marketId: A, from: T0 });
    const got: any[] = [];
    for await (const m of live) {
      if (m.type === 'book') got.push(m.data);
      if (got.length === 5) break;
    }
    const rest = (await raw(`/v3/btc/markets/${A}/snapshots?include_orderbook=true&limit=5&start_time=${T0}`)).data;
    t.same(got, rest);
    const bad = client.stream({ family: 'coin', coin: 'btc', marketId: 'nope' });
    t.match(await all(bad).catch((e: unknown) => e), { code: 'not_found' });
  });

  t.test('pmtape/client resolves by package name from another folder, with declarations', async (t) => {
    const repo = join(here, '..', '..', '..');
    const app = tmpDataDir(t);
    mkdirSync(join(app, 'node_modules'));
    symlinkSync(repo, join(app, 'node_modules', 'pmtape'), 'dir');
    writeFileSync(
      join(app, 'main.mjs'),
      `import { Client, PmtapeError } from 'pmtape/client';
const c = new Client({ baseUrl: process.argv[2], apiKey: process.argv[3] });
let n = 0;
for await (const m of c.markets({ family: 'coin', coin: 'btc' })) n++;
console.log(JSON.stringify({ n, error: typeof PmtapeError }));
`,
    );
    const { stdout } = await promisify(execFile)(process.execPath, ['main.mjs', base, keys.free], { cwd: app });
    t.same(JSON.parse(stdout), { n: 2, error: 'function' });
    t.ok(existsSync(join(repo, 'dist', 'src', 'client', 'index.d.ts')), 'type declarations are built');
  });

  t.test('a 429 is waited out (Retry-After) and retried', async (t) => {
    const limited = await startServe(t, dir, { PMTAPE_RATE_LIMITS: 'free=3/s,paid=3/s' });
    const slow = new Client({ baseUrl: limited, apiKey: keys.free });
    const answers = [];
    for (let i = 0; i < 8; i++) answers.push(await slow.latest({ family: 'yesno-exchange', ticker: yesnoMarket.ticker }));
    t.equal(answers.length, 8, 'every call answered');
    const metrics = await (await fetch(`${limited}/metrics`)).text();
    t.match(metrics, /status="429"\} [1-9]/, 'the server did answer 429 on the way');
  });
});
