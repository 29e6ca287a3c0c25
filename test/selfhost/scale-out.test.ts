// Scale-out without a cluster, with real processes: one `sim`, two `record` processes owning
// disjoint hash shards of the markets, and two `serve` processes over the same data dir. Every
// market must be written by exactly the recorder of its shard and served identically by both
// servers; a third recorder overlapping a live one is refused by the writer lock with a clear error.

import t from 'tap';
import { chmodSync, cpSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { shardHash } from '../../src/recorders/host.js';
import { decodeMarket, lockHolder } from '../../src/storage/testing.js';
import { getJson, runCli, runCliOnce, tempDir, waitFor } from './helpers.js';
import { cliForOtherUser } from './other-user.js';

// Real processes on a machine that may be busy: more than the default per-file budget.
t.setTimeout(300_000);

/** Market ids with a books log, per family folder. */
function bookMarkets(dataDir: string): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const family of ['coin', 'wallet-prediction', 'yesno-exchange']) {
    let names: string[] = [];
    try {
      names = readdirSync(join(dataDir, 'logs', family, 'books'));
    } catch {
      continue;
    }
    out.set(
      family,
      names.map((n) => decodeMarket(n)).filter((m): m is string => m !== null),
    );
  }
  return out;
}

/** Every page of a list route, following next_cursor. */
async function allPages(base: string, path: string, key: string): Promise<unknown[]> {
  const out: unknown[] = [];
  let cursor: string | null = null;
  for (let i = 0; i < 50; i++) {
    const sep = path.includes('?') ? '&' : '?';
    const res = await getJson(`${base}${path}${cursor ? `${sep}cursor=${encodeURIComponent(cursor)}` : ''}`, key);
    if (res.status !== 200) return [{ status: res.status, body: res.body }];
    out.push(...(res.body.data as unknown[]));
    cursor = res.body.next_cursor;
    if (!cursor) break;
  }
  return out;
}

t.test('two shard recorders and two servers over one data dir serve every market identically', async (t) => {
  const dir = tempDir(t);
  const dataDir = join(dir, 'data');
  const simConfig = join(dir, 'sim.json');
  const sim = runCli(t, ['sim', '--port', '0', '--seed', '5', '--window-scale', '0.05', '--config-out', simConfig]);
  await sim.ready;
  const base = JSON.parse(readFileSync(simConfig, 'utf8')) as Record<string, unknown>;
  const shards = ['0/2', '1/2'].map((shard, i) => {
    const file = join(dir, `shard${i}.json`);
    writeFileSync(file, JSON.stringify({ ...base, shard }));
    return file;
  });
  // The comparison below has several coverage requests of one key in flight at once: the per-key
  // limit of expensive requests (2 by default) would answer some 429 on one server and not the other.
  const env = { PMTAPE_PORT: '0', PMTAPE_RATE_LIMITS: 'off', PMTAPE_MAX_EXPENSIVE_PER_KEY: '64' };
  const rec = shards.map((cfg) => runCli(t, ['record', '--config', cfg, '--data-dir', dataDir], { env }));
  await Promise.all(rec.map((r) => r.ready.catch(() => undefined)));

  // Wait until both shards have books logs for several markets.
  const byShard = (): number[] => {
    const n = [0, 0];
    for (const ids of bookMarkets(dataDir).values()) for (const id of ids) n[shardHash(id) % 2]++;
    return n;
  };
  const enough = await waitFor(async () => byShard().every((n) => n >= 2), 40_000);
  t.ok(enough, `both shards recorded books (markets per shard: ${byShard().join(', ')})`);

  // Each market's writer lock is held by the recorder of its shard, never the other.
  const pids = rec.map((r) => r.proc.pid);
  let checked = 0;
  let wrong = 0;
  for (const [family, ids] of bookMarkets(dataDir)) {
    for (const id of ids) {
      const dirName = readdirSync(join(dataDir, 'logs', family, 'books')).find((n) => decodeMarket(n) === id)!;
      const holder = await lockHolder(join(dataDir, 'logs', family, 'books', dirName, '.lock'));
      if (holder === null) continue; // closed already (market ended)
      checked++;
      if (holder !== pids[shardHash(id) % 2]) wrong++;
    }
  }
  t.ok(checked > 0, `locks of live markets were checked (${checked})`);
  t.equal(wrong, 0, 'every live market is written by the recorder of its shard only');

  // A third recorder overlapping shard 0 is refused by the writer lock with a clear message.
  const intruder = runCli(t, ['record', '--config', shards[0], '--data-dir', dataDir], { env: { ...env, PMTAPE_LOG_LEVEL: 'info' } });
  const refused = await waitFor(async () => /locked by process \d+/.test(intruder.stdout + intruder.stderr), 20_000);
  t.ok(refused, 'an overlapping recorder reports "locked by process <pid>"');
  t.match(intruder.stdout + intruder.stderr, /disjoint markets/, 'and says how to fix it');
  await intruder.stop();

  const key = (await runCliOnce(['keys', 'create', '--plan', 'paid', '--name', 'scale', '--data-dir', dataDir])).stdout.trim();
  t.match(key, /^pmt_/, 'a key was created');
  const servers = [0, 1].map(() => runCli(t, ['serve', '--data-dir', dataDir], { env, readyTimeoutMs: 60_000 }));
  const urls = await Promise.all(servers.map((s) => s.ready));
  t.not(urls[0], urls[1], 'two servers on two ports');

  // Freeze the data: stop both recorders cleanly (SIGTERM → flush, fsync, close, exit 0).
  t.same(await Promise.all(rec.map((r) => r.stop(15_000))), [0, 0], 'recorders exit 0 on SIGTERM');
  // Let the servers' views settle: a catalogue view (built at start, before the freeze) is served
  // while it re-reads for up to five times its 1 s TTL, so only a view older than that is certain
  // to be rebuilt from the frozen logs by the first request below.
  await new Promise((r) => setTimeout(r, 5500));

  const coins = (base.coins as string[] | undefined) ?? ['btc', 'eth', 'bnb'];
  const lists: Array<[string, string]> = [
    ...coins.map((c) => [`/v3/${c}/markets?limit=1000`, 'coin'] as [string, string]),
    ['/v3/wallet-prediction/markets?limit=1000', 'wallet-prediction'],
    ['/v3/yesno-exchange/markets?limit=1000', 'yesno-exchange'],
  ];
  let compared = 0;
  let withData = 0;
  const recorded = bookMarkets(dataDir);
  const served = new Set<string>();
  const perMarket: string[] = [];
  for (const [path, family] of lists) {
    const [a, b] = await Promise.all(urls.map((u) => allPages(u, path, key)));
    t.same(a, b, `${path}: both servers list the same markets`);
    for (const m of a as Array<Record<string, any>>) {
      const id = encodeURIComponent(String(m.market_id ?? m.ticker));
      served.add(`${family}/${m.market_id ?? m.ticker}`);
      const coin = path.split('/')[2];
      if (family === 'coin')
        perMarket.push(`/v3/${coin}/markets/${id}/snapshots?include_orderbook=true&limit=200`, `/v3/coverage?family=coin&market_id=${id}`);
      else if (family === 'wallet-prediction')
        perMarket.push(`/v3/wallet-prediction/${id}/snapshots?limit=200`, `/v3/wallet-prediction/${id}/orderbook/latest`);
      else perMarket.push(`/v3/yesno-exchange/${id}/snapshots?include_orderbook=true&limit=200`);
    }
  }
  // A few requests in flight at a time: enough to finish quickly on a busy machine.
  for (let i = 0; i < perMarket.length; i += 8) {
    await Promise.all(
      perMarket.slice(i, i + 8).map(async (p) => {
        const [ra, rb] = await Promise.all(urls.map((u) => getJson(`${u}${p}`, key)));
        // Each server names its own request id in error envelopes; everything else must match.
        for (const r of [ra, rb]) if (r.body?.error) delete r.body.error.request_id;
        if (ra.status !== rb.status || JSON.stringify(ra.body) !== JSON.stringify(rb.body))
          t.fail(`${p} differs between servers`, { a: ra, b: rb });
        else {
          compared++;
          if (ra.status === 200 && (Array.isArray(ra.body.data) ? ra.body.data.length > 0 : ra.body.data)) withData++;
        }
      }),
    );
  }
  // Behind a load balancer consecutive pages hit different servers: a cursor from one works on the other.
  const firstPage = await getJson(`${urls[0]}/v3/btc/markets?limit=2`, key);
  t.ok(firstPage.body.next_cursor, 'a first page of two markets has a cursor');
  const nextPath = `/v3/btc/markets?limit=2&cursor=${encodeURIComponent(firstPage.body.next_cursor)}`;
  const [onA, onB] = await Promise.all(urls.map((u) => getJson(`${u}${nextPath}`, key)));
  t.equal(onB.status, 200, 'server B accepts the cursor server A issued');
  t.same(onB.body, onA.body, 'and continues exactly where server A would');

  t.ok(compared > 0, `responses compared for every listed market (${compared} identical)`);
  t.ok(withData >= 20, `many of them carry recorded books or coverage (${withData})`);
  // A replica that this process cannot write (another user, read-only files) serves the same answers.
  // That user runs its own copy of the CLI, without tap's loader (test/selfhost/other-user.ts): this
  // checkout and tap's loader in it may sit under a folder only their owner can enter (a clone under
  // /root or `mktemp -d`), where uid 65534 died before `ready` (issue 39).
  if (process.getuid?.() === 0) {
    const replica = join(dir, 'replica');
    cpSync(dataDir, replica, { recursive: true });
    for (const p of [dir, replica]) chmodSync(p, 0o755);
    execFileSync('chmod', ['-R', 'a+rX,a-w', replica]);
    const cli = cliForOtherUser(join(dir, 'cli'));
    const ro = runCli(t, ['serve', '--data-dir', replica], {
      cli,
      cwd: join(dir, 'cli'),
      env,
      noLoader: true,
      uid: 65534,
      gid: 65534,
      readyTimeoutMs: 60_000,
    });
    const roUrl = await ro.ready;
    for (const [what, path] of [
      ['markets', '/v3/btc/markets?limit=1000'],
      ['coverage', '/v3/coverage?family=coin'],
      ['a cursor page', nextPath],
    ]) {
      const [a, r] = await Promise.all([urls[0], roUrl].map((u) => getJson(`${u}${path}`, key)));
      t.same(r.body, a.body, `${what}: the read-only replica answers like the primary (${r.status})`);
    }
  } else {
    t.comment('not root: the read-only replica check (serve as another user) is skipped');
  }

  const missing = [...recorded].flatMap(([f, ids]) => ids.filter((id) => !served.has(`${f}/${id}`)).map((id) => `${f}/${id}`));
  t.same(missing, [], 'every market with recorded books is listed by the servers');
});
