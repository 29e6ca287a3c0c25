// `pmtape backfill catalog` as real processes against `pmtape sim`: every family's past and current
// markets land in their catalog logs (and the API lists them with resolution and volume), a rerun
// writes nothing for settled markets, a market locked by a running process is skipped, bad input exits 1.

import t from 'tap';
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { createServer } from 'node:net';
import { createServer as createHttpServer } from 'node:http';
import { listMarkets, openWriter } from '../../src/storage/index.js';
import { loadConfig } from '../../src/config.js';
import { buildApp } from '../../src/api/app.js';
import { createKey } from '../../src/api/plugins/keys.js';
import { inShard } from '../../src/recorders/host.js';
import type { Family, Recorded } from '../../src/schema/observation.js';
import type { Market } from '../../src/schema/market.js';
import { readLog, sleep, tempDir } from './helpers.js';

const CLI = fileURLToPath(new URL('../../cli.js', import.meta.url));

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

// The limit only keeps a hung command from holding the suite; it is no measure (a busy machine is slow).
function run(args: string[], timeoutMs = 180_000): Promise<Run> {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    p.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => p.kill('SIGKILL'), timeoutMs);
    p.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

async function startSimProcess(dir: string): Promise<{ proc: ChildProcess; cfg: string }> {
  const cfg = join(dir, 'sim-config.json');
  // 0.01: 5m windows last 3 s, so the sim has resolved coin markets about a second after start.
  const proc = spawn(process.execPath, [CLI, 'sim', '--window-scale', '0.01', '--config-out', cfg], { stdio: ['ignore', 'pipe', 'pipe'] });
  await new Promise<void>((resolve, reject) => {
    let out = '';
    proc.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('ready ')) resolve();
    });
    proc.on('exit', (c) => reject(new Error(`sim exited ${c}`)));
  });
  return { proc, cfg };
}

const summaryOf = (r: Run): Record<string, number | string | null> => JSON.parse(r.stdout.trim().split('\n').at(-1)!);

async function logs(dataDir: string, family: Family): Promise<Map<string, Recorded[]>> {
  const out = new Map<string, Recorded[]>();
  for (const m of await listMarkets(dataDir, family, 'catalog')) out.set(m, await readLog(dataDir, family, 'catalog', m));
  return out;
}

const lastMarket = (recs: Recorded[]): Market => (recs.at(-1) as Extract<Recorded, { type: 'catalog' }>).market;
/**
 * A settled market: its catalogue entry does not change any more. (Not `cancelled`: the venue may
 * still move a cancelled market's volume until its window ends, and that is a change to record.)
 */
// Settled and complete. A wallet market's status and its topic's end price come from two requests:
// one that resolves between them is first recorded resolved without its end price, and the next run
// rightly records the end price. Such a market is not settled data yet.
const isFinal = (m: Market): boolean =>
  m.family === 'yesno-exchange'
    ? m.status === 'finalized'
    : m.status === 'resolved' && (m.family !== 'wallet-prediction' || m.end_price !== null);

// The three groups share nothing (own temp dirs, own processes): let them overlap.
t.jobs = 3;

t.test('backfill catalog against the emulators', async (t) => {
  const dir = tempDir('pmtape-backfill-');
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const sim = await startSimProcess(dir);
  t.teardown(() => void sim.proc.kill('SIGKILL'));
  await sleep(1500); // the first coin windows close and resolve
  const dataDir = join(dir, 'data');
  const base = ['backfill', 'catalog', '--config', sim.cfg, '--data-dir', dataDir];
  const FAMILIES = ['coin', 'yesno-exchange', 'wallet-prediction'] as const;
  const firstRun = new Map<Family, Map<string, Recorded[]>>();
  // The families' runs are independent processes: run them side by side, then check each.
  const before = Date.now();
  const firsts = await Promise.all(FAMILIES.map((family) => run([...base, '--family', family])));

  for (const [i, family] of FAMILIES.entries()) {
    await t.test(`${family}: past and current markets land in the catalog logs with resolution and volume, never books`, async (t) => {
      const r = firsts[i];
      t.equal(r.code, 0, r.stderr);
      const sum = summaryOf(r);
      t.ok((sum.listed as number) > 0, 'the listing returned markets');
      t.equal(sum.written, sum.listed, 'a fresh data dir gets one event per market');
      t.match(r.stderr, /listing: \d+\/\d+ done/, 'plain progress lines when stderr is not a TTY');
      const got = await logs(dataDir, family);
      t.equal(got.size, sum.listed);
      const finals = [...got.values()].map(lastMarket).filter(isFinal);
      t.ok(finals.length > 0, 'settled markets are included');
      const recs = [...got.values()];
      t.ok(
        recs.every((r) => r.length === 1),
        'one record per market',
      );
      const all = recs.map((r) => r[0] as Extract<Recorded, { type: 'catalog' }>);
      t.ok(
        all.every((r) => r.type === 'catalog' && r.event === 'listed' && r.origin === 'rest'),
        'listed catalog events of origin rest',
      );
      t.ok(
        all.every((r) => r.recv_ts >= before && r.recv_ts <= Date.now()),
        'recv_ts is the backfill time',
      );
      if (family === 'yesno-exchange') {
        t.ok(
          finals.some((m) => m.family === 'yesno-exchange' && (m.result === 'yes' || m.result === 'no')),
          'settled results are kept',
        );
      } else {
        const won = finals.filter((m) => m.family !== 'yesno-exchange' && m.resolution === 'resolved');
        t.ok(won.length > 0, 'resolved markets are present');
        const bad = won.filter(
          (m) =>
            m.family === 'yesno-exchange' || !(m.winning_outcome === 'Up' || m.winning_outcome === 'Down') || typeof m.volume !== 'number',
        );
        t.same(
          bad.map((m) => m.market_id),
          [],
          'every resolved market has a winner and a volume',
        );
        if (family === 'coin')
          t.ok(
            all.some((r) => r.source_ts !== null),
            'the venue time is kept as source_ts',
          );
        if (family === 'wallet-prediction')
          t.ok(
            all.every((r) => r.source_ts === (lastMarket([r]) as { updated_time?: number | null }).updated_time),
            'source_ts is the venue update time',
          );
      }
      t.same(await listMarkets(dataDir, family, 'books'), [], 'no books');
      t.same(await listMarkets(dataDir, family, 'metrics'), [], 'no metrics');
      firstRun.set(family, got);
    });
  }

  // Rerun each family while this (live) process holds one market's catalog log open, like a
  // recorder would: the market ending last, so surely still listed.
  const endOf = (m: Market): number => (m.family === 'yesno-exchange' ? m.close_time : m.end_time) ?? 0;
  const locked = new Map<Family, string>();
  for (const family of FAMILIES) {
    const first = firstRun.get(family);
    if (!first || first.size === 0) continue;
    const id = [...first.keys()].reduce((a, b) => (endOf(lastMarket(first.get(b)!)) > endOf(lastMarket(first.get(a)!)) ? b : a));
    const holder = await openWriter(dataDir, { family, stream: 'catalog', market: id });
    t.teardown(() => holder.close());
    locked.set(family, id);
  }
  const reruns = await Promise.all(FAMILIES.map((family) => run([...base, '--family', family])));

  for (const [i, family] of FAMILIES.entries()) {
    await t.test(`${family}: a rerun writes nothing for settled markets and skips a market a running process holds`, async (t) => {
      const first = firstRun.get(family);
      const lockedId = locked.get(family);
      if (!first || !lockedId) return t.fail('first run missing');
      const finals = [...first].filter(([, recs]) => isFinal(lastMarket(recs)));
      const r = reruns[i];
      t.equal(r.code, 0, r.stderr);
      const sum = summaryOf(r);
      t.equal(sum.skipped_locked, 1);
      t.match(r.stderr, new RegExp(`skipped ${family} market ${lockedId}: its catalog log is held by running process ${process.pid}`));
      t.ok((sum.unchanged as number) > 0, 'markets already recorded count as unchanged');
      const now = await logs(dataDir, family);
      const grew = finals
        .filter(([id, recs]) => now.get(id)?.length !== recs.length)
        .map(
          ([id, recs]) =>
            `${id} (${lastMarket(recs).status} → ${JSON.stringify(
              now
                .get(id)
                ?.slice(recs.length)
                .map((x) => x.type === 'catalog' && [x.market.status, x.changed]),
            )})`,
        );
      t.same(grew, [], `none of the ${finals.length} settled markets gained a record`);
    });
  }

  await t.test('the API lists the backfilled markets with resolution, winner and volume', async (t) => {
    const config = { ...loadConfig({ dataDir }, {}), rateLimits: null, logLevel: 'silent' };
    const key = (await createKey(dataDir, 'paid', 'backfill-test')).key; // wallet-prediction is a paid family
    const app = await buildApp({ config, logger: false, keyPollMs: 50 });
    t.teardown(() => app.close());
    const get = async (url: string): Promise<Record<string, unknown>[]> => {
      const res = await app.inject({ url, headers: { authorization: `Bearer ${key}` } });
      t.equal(res.statusCode, 200, url);
      return res.json<{ data: Record<string, unknown>[] }>().data ?? [];
    };
    // The coin record carries status and the venue's own object (resolution prices, volume).
    const coin = (await get('/v3/btc/markets?limit=200')).filter((m) => m.status === 'resolved');
    t.ok(coin.length > 0, 'resolved btc markets');
    const nat = (m: Record<string, unknown>): Record<string, unknown> => m.native as Record<string, unknown>;
    t.ok(
      coin.every((m) => ['["1","0"]', '["0","1"]'].includes(String(nat(m).outcomePrices)) && typeof nat(m).volumeNum === 'number'),
      'winner and volume in native',
    );
    const wallet = (await get('/v3/wallet-prediction/markets?limit=200')).filter((m) => m.resolution === 'resolved');
    t.ok(wallet.length > 0, 'resolved wallet markets');
    t.ok(
      wallet.every((m) => typeof m.winning_outcome === 'string' && typeof m.volume === 'number'),
      'with winner and volume',
    );
    const yesno = await get('/v3/yesno-exchange/markets?limit=200');
    t.ok(
      yesno.some((m) => m.status === 'finalized' && (m.result === 'yes' || m.result === 'no')),
      'settled yes/no markets with their result',
    );
  });

  await t.test('a backfill over markets a live recorder already recorded writes nothing new for them', async (t) => {
    const dd = join(dir, 'data-recorded');
    const rec = spawn(process.execPath, [CLI, 'record', '--kinds', 'yesno', '--config', sim.cfg, '--data-dir', dd], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    t.teardown(() => void rec.kill('SIGKILL'));
    const exited = new Promise<number | null>((r) => rec.on('exit', (c) => r(c)));
    // Until its first catalogue pass has written the settled markets.
    const until = Date.now() + 15_000;
    while (Date.now() < until && (await listMarkets(dd, 'yesno-exchange', 'catalog')).length < 4) await sleep(100);
    await sleep(300);
    rec.kill('SIGTERM');
    t.equal(await exited, 0, 'the recorder stopped cleanly');
    const recorded = await logs(dd, 'yesno-exchange');
    const finals = [...recorded].filter(([, recs]) => isFinal(lastMarket(recs)));
    t.ok(finals.length > 0, 'the recorder wrote settled markets');
    const r = await run(['backfill', 'catalog', '--family', 'yesno-exchange', '--config', sim.cfg, '--data-dir', dd]);
    t.equal(r.code, 0, r.stderr);
    t.ok((summaryOf(r).unchanged as number) >= finals.length, 'the recorded settled markets are unchanged');
    const now = await logs(dd, 'yesno-exchange');
    t.same(
      finals.filter(([id, recs]) => now.get(id)?.length !== recs.length).map(([id]) => id),
      [],
      'and gained no record',
    );
  });

  await t.test("the shard filter leaves other shards' markets alone", async (t) => {
    const sharded = join(dir, 'shard-config.json');
    writeFileSync(sharded, JSON.stringify({ ...JSON.parse(readFileSync(sim.cfg, 'utf8')), shard: '0/2' }));
    const dd = join(dir, 'data-shard');
    const r = await run(['backfill', 'catalog', '--family', 'wallet-prediction', '--config', sharded, '--data-dir', dd]);
    t.equal(r.code, 0, r.stderr);
    const sum = summaryOf(r);
    t.ok((sum.out_of_shard as number) > 0 && (sum.written as number) > 0);
    const ids = await listMarkets(dd, 'wallet-prediction', 'catalog');
    t.equal(ids.length, sum.written);
    t.ok(
      ids.every((id) => inShard(id, { k: 0, n: 2 })),
      'only shard 0/2 markets',
    );
  });
});

t.test('bad arguments and a dead upstream exit 1 with one clear line', async (t) => {
  const dir = tempDir('pmtape-backfill-bad-');
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const common = ['backfill', 'catalog', '--data-dir', join(dir, 'data')];
  const cases: Array<[string[], RegExp]> = [
    [['--family', 'stocks'], /--family must be one of coin, wallet-prediction, yesno-exchange, got "stocks"/],
    [[], /--family must be one of coin, wallet-prediction, yesno-exchange/],
    [['--family', 'coin', '--since', '2026-02-31'], /--since must be a date YYYY-MM-DD/],
    [['--family', 'coin', '--since', '2999-01-01'], /--since 2999-01-01 is in the future/],
  ];
  const results = await Promise.all(cases.map(([args]) => run([...common, ...args])));
  for (const [i, [args, re]] of cases.entries()) {
    t.equal(results[i].code, 1, args.join(' '));
    t.match(results[i].stderr, re);
    t.notMatch(results[i].stderr, /\n\s+at /, 'no stack trace');
  }

  // A port nothing listens on: every listing fails.
  const port = await new Promise<number>((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const p = (s.address() as { port: number }).port;
      s.close(() => resolve(p));
    });
  });
  const cfg = join(dir, 'dead.json');
  writeFileSync(cfg, JSON.stringify({ series: ['KXBTC15M'], upstreams: { yesno: { rest: `http://127.0.0.1:${port}/yesno` } } }));
  const r = await run([...common, '--family', 'yesno-exchange', '--config', cfg]);
  t.equal(r.code, 1);
  t.match(r.stderr, /pmtape: backfill failed: every upstream listing failed \(last: KXBTC15M: .*\)\n$/);
  t.same(await listMarkets(join(dir, 'data'), 'yesno-exchange', 'catalog'), [], 'nothing written');
});

t.test('garbage from the upstream is counted and skipped, never written, and the run still succeeds', async (t) => {
  const dir = tempDir('pmtape-backfill-garbage-');
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const seen: string[] = [];
  const server = createHttpServer((req, res) => {
    seen.push(req.url ?? '');
    res.writeHead(200, { 'content-type': 'application/json' });
    // one object that is no market, one that is not even an object, one market without identifiers
    res.end(JSON.stringify([{ garbage: true }, 42, { id: 'x', markets: [{ id: 7, question: 'no ids' }] }]));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => server.close());
  const port = (server.address() as { port: number }).port;
  const cfg = join(dir, 'garbage.json');
  writeFileSync(
    cfg,
    JSON.stringify({ coins: ['btc'], windows: ['5m'], upstreams: { catalog: { rest: `http://127.0.0.1:${port}/catalog` } } }),
  );
  const dataDir = join(dir, 'data');
  const r = await run(['backfill', 'catalog', '--family', 'coin', '--since', '2026-01-01', '--config', cfg, '--data-dir', dataDir]);
  t.equal(r.code, 0, r.stderr);
  const sum = summaryOf(r);
  t.equal(sum.listed, 0);
  t.equal(sum.written, 0);
  t.equal(sum.ignored, 4, 'both passes refused their two non-markets');
  t.same(await listMarkets(dataDir, 'coin', 'catalog'), []);
  t.equal(seen.length, 2, 'one page per pass');
  t.ok(
    seen.every((u) => u.includes('series_slug=btc-up-or-down-5m') && u.includes('end_date_min=2026-01-01T00%3A00%3A00.000Z')),
    'since reaches the upstream query',
  );
  t.ok(seen.some((u) => u.includes('closed=true')) && seen.some((u) => u.includes('closed=false')), 'closed and open markets are listed');

  // A body that is not a list at all fails the listing: with every listing failed, exit 1.
  server.removeAllListeners('request');
  server.on('request', (_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"error":"maintenance"}'));
  const r2 = await run(['backfill', 'catalog', '--family', 'coin', '--config', cfg, '--data-dir', dataDir]);
  t.equal(r2.code, 1);
  t.match(
    r2.stderr,
    /pmtape: backfill failed: every upstream listing failed \(last: btc-up-or-down-5m: \/events answered .* instead of an array\)/,
  );
});
