// The emulated clob + catalog venue over real sockets: the catalogue's wire shape and lifecycle,
// the market WebSocket's subscribe/initial dump/PING-PONG, upgrade faults, the CLI `sim` command,
// and `--replay` of the real 51-message burst recorded end to end.

import t from 'tap';
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import WebSocket from 'ws';
import { startSim } from '../../src/sim/server.js';
import { MarketModel } from '../../src/sim/market-model.js';
import { gammaMarket } from '../../src/sim/catalog.js';
import { rng } from '../../src/sim/faults.js';
import { startRecorders } from '../../src/recorders/host.js';
import { normalizeClob } from '../../src/recorders/clob/normalize.js';
import { normalizeCatalogMarket } from '../../src/recorders/catalog/normalize.js';
import { MarketBooks } from '../../src/book/book-state.js';
import type { BookSnapshot } from '../../src/schema/observation.js';
import { readAll, simConfig, tempDir, waitFor } from '../recorders/helpers.js';

const CLI = fileURLToPath(new URL('../../cli.js', import.meta.url));
const BURST = fileURLToPath(new URL('../../../test/fixtures/clob/ws_market_price_change_crossing_burst.json', import.meta.url));

t.test('the catalogue lists rolling up/down markets in the venue shape, and they resolve', async (t) => {
  const sim = await startSim({ seed: 2, windowScale: 0.005, coins: ['btc'], windows: ['5m'] });
  t.teardown(() => sim.close());
  const get = async (q: string): Promise<Array<Record<string, unknown>>> =>
    (await fetch(`${sim.url}/catalog/events?${q}`)).json() as Promise<Array<Record<string, unknown>>>;
  const events = await get('series_slug=btc-up-or-down-5m');
  t.ok(events.length >= 3, 'current and upcoming windows are listed');
  const m = (events[0].markets as Array<Record<string, unknown>>)[0];
  t.type(m.outcomes, 'string', 'outcomes is a JSON-encoded string');
  t.same(JSON.parse(m.outcomes as string), ['Up', 'Down']);
  t.equal(JSON.parse(m.clobTokenIds as string).length, 2);
  t.match(m.slug, /^btc-updown-5m-\d+$/);
  t.ok(normalizeCatalogMarket({ ...m, events: [events[0]] }, Date.now()), 'the recorder normalizer accepts it');
  t.same(await get('series_slug=eth-up-or-down-5m'), [], 'unconfigured coins are not listed');
  // Wait for one market to close and resolve (1.5 s windows, closes ~0.45 s after the end).
  const resolved = await waitFor(
    async () =>
      (await get('series_slug=btc-up-or-down-5m&closed=true')).some((e) => {
        const mk = (e.markets as Array<Record<string, unknown>>)[0];
        return ['["1","0"]', '["0","1"]'].includes(String(mk.outcomePrices)) && typeof mk.closedTime === 'string';
      }),
    8000,
    200,
  );
  t.ok(resolved, 'a market closed and resolved with a winning outcome');
});

t.test('the market WebSocket sends a batched initial dump, streams changes and answers PING', async (t) => {
  const sim = await startSim({ seed: 3, windowScale: 0.02, rate: 200, coins: ['btc'], windows: ['5m'] });
  t.teardown(() => sim.close());
  const events = (await (await fetch(`${sim.url}/catalog/events?series_slug=btc-up-or-down-5m`)).json()) as Array<{
    markets: Array<{ clobTokenIds: string }>;
  }>;
  const tokens = events.flatMap((e) => JSON.parse(e.markets[0].clobTokenIds) as string[]);
  const ws = new WebSocket(`${sim.url.replace('http', 'ws')}/clob/ws/market`);
  t.teardown(() => ws.terminate());
  const frames: string[] = [];
  ws.on('message', (d) => frames.push((d as Buffer).toString()));
  await new Promise((r) => ws.once('open', r));
  ws.send(JSON.stringify({ assets_ids: tokens, type: 'market', initial_dump: true }));
  ws.send('PING');
  t.ok(await waitFor(() => frames.includes('PONG') && frames.length > 20, 5000), 'PONG and a stream of events');
  const dump = JSON.parse(frames.find((f) => f.startsWith('['))!) as Array<{ event_type: string; bids: Array<{ price: string }> }>;
  t.ok(
    dump.every((e) => e.event_type === 'book'),
    'the initial dump is an array of books',
  );
  const bids = dump[0].bids.map((b) => Number(b.price));
  t.same(
    bids,
    [...bids].sort((a, b) => a - b),
    'levels arrive worst-to-best',
  );
  const books = new MarketBooks();
  let changes = 0;
  for (const f of frames) {
    if (f === 'PONG') continue;
    for (const o of normalizeClob(JSON.parse(f), 1)) {
      books.apply(o);
      if (o.type === 'book_delta') changes++;
    }
  }
  t.ok(changes > 10, `price changes streamed: ${changes}`);
  const up = books.view(tokens[0]);
  t.ok(up && up.bids.length > 0 && up.asks.length > 0 && Number(up.bids[0][0]) < Number(up.asks[0][0]), 'a consistent uncrossed book');
});

t.test('the model churns levels, trades and keeps the Down book the mirror of the Up book', async (t) => {
  const model = new MarketModel(['btc'], ['5m'], 0.02, rng(9), 9);
  const now0 = Date.now();
  model.refresh(now0);
  const m = model.live(now0).find((x) => x.startMs <= now0) ?? model.live(now0)[0];
  const events: Array<Record<string, unknown>> = [];
  for (let i = 0; i < 3000; i++) model.step(m, Math.min(now0 + i, m.endMs - 1), (_tokens, e) => events.push(e));
  const count = (type: string): number => events.filter((e) => e.event_type === type).length;
  t.ok(count('price_change') >= 3000, `price changes: ${count('price_change')}`);
  t.ok(count('last_trade_price') > 0 && count('book') > 0, 'trades, each followed by fresh books');
  const books = new MarketBooks();
  for (const e of events) for (const o of normalizeClob(e, 1)) books.apply(o);
  books.apply(normalizeClob(model.bookEvent(m, 0, now0), 1)[0]);
  books.apply(normalizeClob(model.bookEvent(m, 1, now0), 1)[0]);
  const up = books.view(m.tokens[0])!;
  const down = books.view(m.tokens[1])!;
  t.ok(Number(up.bids[0][0]) < Number(up.asks[0][0]), 'the Up book is not crossed');
  t.same(
    down.bids.map((l) => Number(l[0])),
    up.asks.map((l) => Math.round((1 - Number(l[0])) * 100) / 100),
    'Down bids mirror Up asks',
  );
});

t.test('a few markets are cancelled before their window and the catalogue shows it', async (t) => {
  const model = new MarketModel(['btc', 'eth', 'bnb'], ['5m', '15m'], 0.001, rng(1), 1, 40);
  const now = Date.now();
  model.refresh(now);
  const all = [...model.markets.values()];
  const doomed = all.filter((m) => m.cancelMs !== null);
  t.ok(doomed.length > 0 && doomed.length < all.length / 5, `${doomed.length} of ${all.length} cancelled`);
  const m = doomed[0];
  t.ok(m.cancelMs! > m.listMs && m.cancelMs! < m.startMs, 'between listing and start');
  const before = normalizeCatalogMarket(gammaMarket(model, m, m.cancelMs! - 1), m.cancelMs! - 1)!;
  const after = normalizeCatalogMarket(gammaMarket(model, m, m.cancelMs!), m.cancelMs!)!;
  t.equal(before.status, 'upcoming');
  t.equal(after.status, 'cancelled');
  t.notOk(model.live(m.cancelMs!).includes(m), 'its books stop');
});

t.test('a 429 upgrade carries Retry-After; unknown paths are 404', async (t) => {
  const sim = await startSim({ seed: 4, faults: 'http429=1,retry_after_s=7', coins: ['btc'], windows: ['5m'] });
  t.teardown(() => sim.close());
  const res = await fetch(`${sim.url}/catalog/events`);
  t.equal(res.status, 429);
  t.equal(res.headers.get('retry-after'), '7');
  const ws = new WebSocket(`${sim.url.replace('http', 'ws')}/clob/ws/market`);
  const status = await new Promise<number>((resolve) => {
    ws.on('unexpected-response', (_q, r) => resolve(r.statusCode ?? 0));
    ws.on('error', () => resolve(-1));
  });
  t.equal(status, 429);
  t.equal((await fetch(`${sim.url}/nowhere`)).status, 404);
});

t.test('`pmtape sim` prints ready and writes a config that points at itself', async (t) => {
  const dir = tempDir();
  const cfgFile = join(dir, 'sim.json');
  const child = spawn(
    process.execPath,
    [CLI, 'sim', '--port', '0', '--config-out', cfgFile, '--seed', '9', '--window-scale', '0.02', '--faults', 'gap=0.01'],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  t.teardown(() => child.kill('SIGKILL'));
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /^ready (\S+)$/m.exec(out);
      if (m) resolve(m[1]);
    });
    child.on('exit', (c) => reject(new Error(`sim exited ${c}`)));
  });
  const cfg = JSON.parse(readFileSync(cfgFile, 'utf8'));
  t.equal(cfg.upstreams.clob.ws, `${url.replace('http', 'ws')}/clob/ws/market`);
  t.equal(cfg.upstreams.catalog.rest, `${url}/catalog`);
  t.ok((await fetch(`${cfg.upstreams.catalog.rest}/events?series_slug=btc-up-or-down-5m`)).ok);
  const exit = new Promise((r) => child.on('exit', r));
  child.kill('SIGTERM');
  t.equal(await exit, 0, 'SIGTERM exits 0');
  const bad = spawn(process.execPath, [CLI, 'sim', '--faults', 'teleport=1'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let err = '';
  bad.stderr.on('data', (d: Buffer) => (err += d.toString()));
  t.equal(await new Promise((r) => bad.on('exit', r)), 1);
  t.match(err, /unknown fault "teleport"/);
});

t.test('--replay serves the real burst and the recorder rebuilds the real final book', async (t) => {
  const sim = await startSim({ seed: 1, replay: BURST, replaySpeed: 0 });
  t.teardown(() => sim.close());
  const dir = tempDir();
  const { config } = simConfig(sim.config, dir, { recorders: { catalog_poll_ms: 200 } });
  const host = await startRecorders(config, { kinds: ['clob'] });
  let stopped = false;
  t.teardown(async () => {
    if (!stopped) await host.stop();
  });
  const burst = JSON.parse(readFileSync(BURST, 'utf8')) as unknown[];
  const final = normalizeClob(burst[50], 0)[0] as BookSnapshot;
  const done = await waitFor(
    async () => {
      const logs = await readAll(dir, 'books');
      return [...logs.values()].some((recs) => recs.filter((r) => r.type === 'book').length >= 2);
    },
    8000,
    100,
  );
  t.ok(done, 'both real books arrived');
  stopped = true;
  await host.stop();
  const [recs] = [...(await readAll(dir, 'books')).values()];
  const books = new MarketBooks();
  for (const r of recs) books.apply(r);
  const deltas = recs.filter((r) => r.type === 'book_delta');
  t.equal(deltas.length, 49, 'the deltas of the token with a snapshot; the other token had none');
  const lastBook = [...recs].reverse().find((r) => r.type === 'book') as BookSnapshot;
  t.same(lastBook.bids, final.bids);
  t.same(
    recs.filter((r) => r.type === 'gap' && r.reason === 'sequence_gap'),
    [],
    'no false loss on the real data',
  );
});

t.test('--replay keeps the recorded pace of {recv_ts, msg} lines (scaled by the speed)', async (t) => {
  const burst = JSON.parse(readFileSync(BURST, 'utf8')) as Array<Record<string, unknown>>;
  const dir = tempDir();
  const file = join(dir, 'paced.jsonl');
  const t0 = 1_790_658_661_234;
  const lines = [0, 1, 2, 3].map((i) => JSON.stringify({ recv_ts: t0 + i * 400, msg: burst[i] }));
  writeFileSync(file, `${lines.join('\n')}\n`);
  const sim = await startSim({ seed: 1, replay: file, replaySpeed: 2 });
  t.teardown(() => sim.close());
  const ws = new WebSocket(`${sim.url.replace('http', 'ws')}/clob/ws/market`);
  t.teardown(() => ws.terminate());
  const at: number[] = [];
  ws.on('message', (d) => {
    if ((d as Buffer).toString() !== 'PONG') at.push(Date.now());
  });
  await new Promise((r) => ws.once('open', r));
  ws.send(JSON.stringify({ assets_ids: [String(burst[0].asset_id)], type: 'market' }));
  t.ok(await waitFor(() => at.length >= 4, 5000), 'all four messages arrive');
  t.ok(at[3] - at[0] >= 500, `1.2 s of capture at speed 2 took ${at[3] - at[0]} ms`);
});
