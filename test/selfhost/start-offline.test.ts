// `start` on a machine without network, as a real process: the first start creates one paid key and
// prints it once (with how to make more), upstream failures become short rate-limited log lines —
// never stack traces — while the API, the page and /healthz serve; SIGINT/SIGTERM exit 0. And when
// the upstreams die under a running `start`, gap records with reasons appear in coverage.

import t from 'tap';
import { createServer } from 'node:net';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { getJson, keyFrom, runCli, tempDir, waitFor } from './helpers.js';

// Real processes on a machine that may be busy: more than the default per-file budget.
t.setTimeout(300_000);

/** A loopback port with nothing listening: connections are refused at once, like a dead network. */
async function deadPort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
  const port = (srv.address() as { port: number }).port;
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}

t.test('start without network prints one first key, logs upstream failures briefly and still serves', async (t) => {
  const dir = tempDir(t);
  const dataDir = join(dir, 'data');
  const dead = `127.0.0.1:${await deadPort()}`;
  const config = join(dir, 'offline.json');
  writeFileSync(
    config,
    JSON.stringify({
      upstreams: {
        // A generous request budget so the recorders fail (and log) many times within the test.
        clob: { ws: `ws://${dead}/ws/market`, rest: `http://${dead}`, rate_per_s: 200 },
        catalog: { rest: `http://${dead}`, rate_per_s: 200 },
        yesno: { rest: `http://${dead}/trade-api/v2`, rate_per_s: 200 },
        wallet: { rest: `http://${dead}`, ws: `ws://${dead}/ws`, rate_per_s: 200 },
      },
      recorders: { backoff_min_ms: 50, backoff_max_ms: 500, catalog_poll_ms: 200 },
    }),
  );
  const env = { PMTAPE_PORT: '0', PMTAPE_LOG_LEVEL: 'info' };
  // `start` listens before the recorders reach any upstream, so `ready` never waits for one.
  const first = runCli(t, ['start', '--config', config, '--data-dir', dataDir], { env, readyTimeoutMs: 90_000 });
  const url = await first.ready;
  const key = keyFrom(first.stdout);
  t.ok(key, 'the first start printed a key on a "key pmt_…" line');
  t.match(first.stdout, /keys create --plan/, 'and says how to make more keys');

  // Let the recorders keep failing against the dead upstreams a little longer (retries at 50–500 ms).
  await new Promise((r) => setTimeout(r, 2000));

  t.equal((await getJson(`${url}/healthz`)).status, 200, '/healthz answers 200 without a key');
  const markets = await getJson(`${url}/v3/btc/markets`, key!);
  t.equal(markets.status, 200, 'the API serves with the printed key');
  t.same(markets.body.data, [], 'nothing recorded, nothing invented');
  t.equal((await getJson(`${url}/v3/btc/markets`)).status, 401, 'and refuses requests without a key');
  const page = await fetch(`${url}/`);
  t.equal(page.status, 200, 'the page is served at /');
  t.match(await page.text(), /<title>pmtape<\/title>/, 'the page is the pmtape page');

  // Log lines are buffered (written at the latest half a second after they were logged): wait for them.
  t.ok(
    await waitFor(async () => first.stdout.split('\n').some((l) => l.startsWith('{"level"')), 20_000, 50),
    'pino JSON log lines go to stdout',
  );
  t.notOk(
    first.stderr.split('\n').some((l) => l.startsWith('{"level"')),
    'and none to stderr',
  );
  const out = first.stdout + first.stderr;
  t.notMatch(out, /\n\s+at .+:\d+:\d+/, 'no stack traces in the output');
  const lines = out.split('\n').filter((l) => l.startsWith('{'));
  const problems = lines.map((l) => JSON.parse(l) as { level: number; msg?: string; kind?: string }).filter((l) => l.level >= 40);
  t.ok(problems.length > 0, `upstream failures are logged (${problems.length} warn/error lines)`);
  const perMessage = new Map<string, number>();
  for (const p of problems) perMessage.set(`${p.kind ?? ''} ${p.msg ?? ''}`, (perMessage.get(`${p.kind ?? ''} ${p.msg ?? ''}`) ?? 0) + 1);
  const worst = Math.max(...perMessage.values());
  t.ok(worst <= 12, `each failure is rate-limited in the log (at most ${worst} lines of one kind over many retries)`);

  // A second start printing no key is covered in first-key.test.ts (same function, no 10 s restart).
  t.equal(await first.stop(15_000, 'SIGINT'), 0, 'SIGINT (Ctrl-C): clean exit 0');
});

t.test('when the upstreams die under a running start, gaps are recorded and the API keeps serving', async (t) => {
  const dir = tempDir(t);
  const dataDir = join(dir, 'data');
  const simConfig = join(dir, 'sim.json');
  const sim = runCli(t, ['sim', '--port', '0', '--seed', '9', '--window-scale', '0.2', '--config-out', simConfig]);
  await sim.ready;
  const start = runCli(t, ['start', '--config', simConfig, '--data-dir', dataDir], {
    env: { PMTAPE_PORT: '0', PMTAPE_LOG_LEVEL: 'info' },
    readyTimeoutMs: 60_000,
  });
  const url = await start.ready;
  const key = keyFrom(start.stdout)!;
  // The markets whose book feed is live right now (coverage says `connected`). Windows are short here
  // (window scale 0.2), so a market may close between this check and the kill: it then has no
  // disconnect gap, rightly. The test follows every market live at the kill, not one of them.
  const liveMarkets = async (): Promise<string[]> => {
    const res = await getJson(`${url}/v3/coverage?family=coin`, key);
    const rows = (res.body?.data ?? []) as Array<{ market_id: string; datasets?: { books?: unknown } }>;
    const out: string[] = [];
    for (const r of rows.filter((r) => r.datasets?.books)) {
      const one = await getJson(`${url}/v3/coverage?family=coin&market_id=${r.market_id}`, key);
      if (one.body?.data?.connected === true) out.push(r.market_id);
    }
    return out;
  };
  const live = await waitFor(
    async () => {
      const l = await liveMarkets();
      return l.length > 0 ? l : null;
    },
    60_000,
    500,
  );
  t.ok(live, `books are being recorded live (${live?.join(', ')})`);
  const market = live?.[0];

  sim.proc.kill('SIGKILL'); // the network goes away mid-stream
  const gapped = await waitFor(
    async () => {
      for (const m of live ?? []) {
        const res = await getJson(`${url}/v3/coverage?family=coin&market_id=${m}`, key);
        const gaps = (res.body?.data?.gaps ?? []) as Array<{ reason: string }>;
        const gap = gaps.find((g) => ['disconnected', 'upstream_error', 'stale'].includes(g.reason));
        if (gap) return gap;
      }
      return null;
    },
    60_000,
    500,
  );
  t.ok(gapped, `coverage shows a gap with its reason (${gapped?.reason})`);
  t.equal((await getJson(`${url}/healthz`)).status, 200, '/healthz still answers');
  const snaps = await getJson(`${url}/v3/btc/markets/${market}/snapshots?limit=5`, key);
  t.ok([200, 404].includes(snaps.status), `recorded data is still served (${snaps.status})`);
  t.notMatch(start.stdout + start.stderr, /\n\s+at .+:\d+:\d+/, 'no stack traces in the output');
  t.equal(await start.stop(15_000), 0, 'SIGTERM: clean exit 0 while upstreams are down');
});
