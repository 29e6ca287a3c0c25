// `npm run bench -- api`: read-side figures from one run, against baselines of the same run.
// - latest vs hello: `wrk` (C, one thread, its own process; tools/bench/wrk.ts) on
//   `.../orderbook/latest` of a `pmtape serve` child vs a bare Fastify route in another child,
//   alternating rounds, medians: req/s at 64 connections (target ≥ 0.8×) and p99 at 4 connections,
//   the service time (target ≤ 1.5×). In the same rounds a second bare route in its own process is
//   paired with hello the same way (`a_a_control`): what the machine reports for no difference at all.
// - at_rate: both routes at one fixed offered load over 64 connections with the open-loop generator
//   (open-loop.ts): latency below saturation, timed from when each request was due.
// - first snapshots page at random times for a market with SMALL vs BIG records (p50/p99 over
//   PMTAPE_BENCH_API_PAGES pages, default 1000, after 20 warm-up pages whose first is reported as
//   the cold figure; O(log n), target big p99 ≤ 2× small p99).
// - the small history ends now (a live market: latest reads today's file); the big one lies on past
//   days, and `latest_past_day_vs_hello` measures latest there against hello (target ≥ 0.7×).
// - server RSS after the same workload over the small vs the big history (flat).
// Sizes: PMTAPE_BENCH_API_SMALL (default 1e5), PMTAPE_BENCH_API_BIG (default 1e7: about a minute
// to write and ~1 GB of disk), PMTAPE_BENCH_API_SECONDS (wrk duration per round, default 5),
// PMTAPE_BENCH_API_ROUNDS (default 7: medians of 3 strayed as far as the A/A control's 1.29), PMTAPE_BENCH_NODE_ARGS (node flags for the servers),
// PMTAPE_BENCH_API_LATEST_ONLY=1 (part 1 only), PMTAPE_BENCH_API_SNAPSHOT_LEVELS (full books, see below),
// PMTAPE_BENCH_API_RATE (the at_rate load; default half the latest req/s just measured),
// PMTAPE_BENCH_API_PAGES_ONLY=1 (part 2 only: first pages and RSS, no load rounds).

import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { execFileSync } from 'node:child_process';
import { createKey } from '../../src/api/plugins/keys.js';
import type { CoinMarket } from '../../src/schema/market.js';
import type { Observation } from '../../src/schema/observation.js';
import { openWriter } from '../../src/storage/index.js';
import type { OpenLoopResult } from './open-loop.js';
import { ensureWrk, wrk } from './wrk.js';
import { onCpus, pinning } from './pin.js';
import { appendToServed, firstPages } from './api-probes.js';
import { coinMarket } from '../fixtures/markets.js';

let WRK = 'wrk';
const CLI = join(dirname(fileURLToPath(import.meta.url)), '../../cli.js');
const log = (s: string): void => void process.stderr.write(`api bench: ${s}\n`);
/** Where the generators and the measured servers run (pin.ts). */
const PIN = pinning();
const envNum = (name: string, dflt: number): number => {
  const v = Number(process.env[name]);
  return Number.isFinite(v) && v > 0 ? v : dflt;
};

/** The big history lies on past days; the small one ends now (a market being recorded live). */
const T0_PAST = Date.parse('2026-07-01T00:00:00.000Z');
const STEP_MS = 10;

const market = (id: string): CoinMarket =>
  coinMarket(id, { event_id: null, condition_id: `0x${id}`, slug: id, question: 'Bench?', start_time: null });

const ladder = (p0: number, step: number, levels = 10): [string, string][] =>
  Array.from({ length: levels }, (_, i) => [(p0 + step * i).toFixed(levels > 10 ? 3 : 2), String(100 + i)]);

/**
 * PMTAPE_BENCH_API_SNAPSHOT_LEVELS=L (default 0): every record is a full book of L levels a side
 * instead of a one-change delta (2.8 KB a record at 100 levels), to reach the 1 GB and
 * 10 GB histories in minutes instead of hours.
 */
const SNAPSHOT_LEVELS = Math.max(0, Math.min(100, Math.round(Number(process.env.PMTAPE_BENCH_API_SNAPSHOT_LEVELS ?? 0) || 0)));

/** Writes `n` book records (deltas or full books, a checkpoint every 500) for one market through the storage writer. */
async function generate(dataDir: string, id: string, n: number, T0: number): Promise<void> {
  const m = market(id);
  const cat = await openWriter(dataDir, { family: 'coin', stream: 'catalog', market: id });
  await cat.append({ type: 'catalog', event: 'listed', changed: [], market: m, recv_ts: T0 - 1000, source_ts: null });
  await cat.close();
  const w = await openWriter(dataDir, { family: 'coin', stream: 'books', market: id }, { fsyncIntervalMs: 200, fsyncMaxRecords: 50_000 });
  const [up, down] = m.outcomes.map((o) => o.token_id);
  let pending: Promise<unknown>[] = [];
  const started = Date.now();
  for (let i = 0; i < n; i++) {
    const t = T0 + i * STEP_MS;
    let obs: Observation;
    let checkpoint = false;
    if (i < 2)
      obs = {
        type: 'book',
        token_id: i ? down : up,
        units: 'decimal',
        bids: ladder(0.4, -0.01),
        asks: ladder(0.41, 0.01),
        recv_ts: t,
        source_ts: t - 3,
      };
    else if (i % 500 === 0) {
      checkpoint = true;
      obs = {
        type: 'book_checkpoint',
        units: 'decimal',
        books: [up, down].map((token_id) =>
          SNAPSHOT_LEVELS > 0
            ? { token_id, bids: ladder(0.4, -0.001, SNAPSHOT_LEVELS), asks: ladder(0.41, 0.001, SNAPSHOT_LEVELS) }
            : { token_id, bids: ladder(0.4, -0.01), asks: ladder(0.41, 0.01) },
        ),
        recv_ts: t,
        source_ts: null,
      };
    } else if (SNAPSHOT_LEVELS > 0) {
      const d = (i % 7) * 0.001;
      obs = {
        type: 'book',
        token_id: i % 2 ? up : down,
        units: 'decimal',
        bids: ladder(0.4 - d, -0.001, SNAPSHOT_LEVELS),
        asks: ladder(0.41 + d, 0.001, SNAPSHOT_LEVELS),
        recv_ts: t,
        source_ts: t - 3,
      };
    } else {
      obs = {
        type: 'book_delta',
        token_id: i % 2 ? up : down,
        changes: [
          {
            side: i % 3 ? 'bid' : 'ask',
            price: (i % 3 ? 0.4 - 0.01 * (i % 10) : 0.41 + 0.01 * (i % 10)).toFixed(2),
            size: String(100 + (i % 97)),
          },
        ],
        recv_ts: t,
        source_ts: t - 3,
      };
    }
    pending.push(w.write(obs, checkpoint ? { checkpoint: true } : undefined));
    if (w.backpressure || pending.length >= 20_000) {
      await Promise.all(pending);
      pending = [];
      if (w.backpressure) await w.drained();
    }
    if (i > 0 && i % 1_000_000 === 0) log(`${id}: ${i}/${n} records (${Math.round(i / ((Date.now() - started) / 1000))}/s)`);
  }
  await Promise.all(pending);
  await w.close();
}

function spawnReady(args: string[], env: NodeJS.ProcessEnv): Promise<{ proc: ChildProcess; url: string }> {
  // PMTAPE_BENCH_NODE_ARGS (e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof") goes to the measured servers only.
  const nodeArgs = (process.env.PMTAPE_BENCH_NODE_ARGS ?? '').split(/\s+/).filter(Boolean);
  const [cmd, argv] = onCpus(PIN.servers, process.execPath, [...nodeArgs, ...args]);
  const proc = spawn(cmd, argv, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] }); // taskset execs: same pid
  return new Promise((resolve, reject) => {
    const lines = createInterface({ input: proc.stdout });
    lines.on('line', (l) => {
      const m = /^ready (\S+)/.exec(l);
      if (!m) return;
      // The rest (request log lines) is read and dropped, as a log collector would take it.
      lines.close();
      proc.stdout.resume();
      resolve({ proc, url: m[1] });
    });
    proc.once('exit', (code) => reject(new Error(`${args.join(' ')} exited with ${code}`)));
  });
}

/**
 * `pmtape serve` with rate limits off and, unless `logs` is 'default', no request log (level warn:
 * the quiet figures). 'default' is what a user runs: level info, one line per request on stdout.
 */
const serve = (dataDir: string, logs: 'quiet' | 'default' = 'quiet'): Promise<{ proc: ChildProcess; url: string }> =>
  spawnReady(
    [CLI, 'serve', '--data-dir', dataDir, '--port', '0'],
    logs === 'quiet' ? { PMTAPE_RATE_LIMITS: 'off', PMTAPE_LOG_LEVEL: 'warn' } : { PMTAPE_RATE_LIMITS: 'off', PMTAPE_LOG_LEVEL: undefined },
  );

/** The baseline: a bare Fastify route answering a small JSON object, in its own process like serve. */
const HELLO = `import Fastify from 'fastify';
const app = Fastify({ logger: false });
app.get('/hello', async () => ({ hello: 'world' }));
const url = await app.listen({ host: '127.0.0.1', port: 0 });
process.stdout.write('ready ' + url + '\\n');
process.on('SIGTERM', () => app.close().then(() => process.exit(0)));`;

async function stop(proc: ChildProcess): Promise<void> {
  if (proc.exitCode !== null) return;
  const done = new Promise((r) => proc.once('exit', r));
  proc.kill('SIGTERM');
  await done;
}

function rssMb(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Math.round(Number(m[1]) / 102.4) / 10 : NaN;
}

/** One wrk round (its own process, one thread) against `url` with `connections` connections. */
async function load(
  url: string,
  headers: Record<string, string>,
  seconds: number,
  connections = 64,
): Promise<{ rps: number; p50: number; p99: number; errors: number; requests: number }> {
  const r = await wrk(WRK, url, headers, connections, seconds, PIN.generator);
  return { rps: r.rps, p50: r.p50_ms, p99: r.p99_ms, errors: r.errors, requests: r.requests };
}

/** CPU (user + system, main thread and pool) a process has used so far, in ms (10 ms ticks). */
function cpuMsOf(pid: number): number {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(f[11]) + Number(f[12])) * 10;
}

/** Runs a node script in its own process and parses the one JSON object it prints. */
async function nodeJson<T>(args: string[], name: string): Promise<T> {
  const out = await new Promise<string>((resolve, reject) => {
    const [cmd, argv] = onCpus(PIN.generator, process.execPath, args);
    const p = spawn(cmd, argv, { stdio: ['ignore', 'pipe', 'ignore'] });
    let text = '';
    p.stdout.on('data', (b: Buffer) => (text += b.toString()));
    p.once('error', reject);
    p.once('exit', (code) => (code === 0 ? resolve(text) : reject(new Error(`${name} exited with ${code}`))));
  });
  return JSON.parse(out) as T;
}

const round2 = (x: number): number => Math.round(x * 100) / 100;

/** Issue 15's targets, all ratios against a baseline measured in the same run. */
const TARGETS = {
  append_to_served_max_ms: 100,
  latest_vs_hello_min: 0.8,
  latest_default_config_vs_hello_min: 0.7,
  latest_default_config_vs_hello_by_cpu_min: 0.7,
  c4_latest_p99_vs_hello_max: 1.5,
  latest_past_day_vs_hello_min: 0.7,
  first_page_big_vs_small_p99_max: 2,
};

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/**
 * hello and latest in alternating rounds (both servers up, each warmed first), the median of each
 * figure over rounds: load from other processes on a shared machine hits both routes alike
 * instead of whichever happened to run during a burst. Each round drives 64 connections (the
 * throughput figure: saturation) and then 4 (the service-time figure: with 4 requests in flight
 * on 2 cores the p99 is what a request costs plus scheduling, not 64 requests of queue).
 */
async function compare(
  hello: string,
  latest: string,
  auth: Record<string, string>,
  seconds: number,
  rounds: number,
  control?: string,
  latestPid?: number,
  helloPid?: number,
) {
  // Warm-up (PMTAPE_BENCH_API_WARMUP seconds each, default 5): `serve` has far more code for the JIT
  // than the bare route; after 1 s its first round still ran 25 – 30 % below the later ones.
  const warmup = envNum('PMTAPE_BENCH_API_WARMUP', 5);
  await load(hello, {}, warmup);
  await load(latest, auth, warmup);
  if (control) await load(control, {}, warmup);
  type R = Awaited<ReturnType<typeof load>>;
  const h: R[] = [];
  const l: R[] = [];
  const h4: R[] = [];
  const l4: R[] = [];
  const c: R[] = [];
  const c4: R[] = [];
  // The server's CPU per latest request over the 64-connection rounds: what a request costs it,
  // which other processes' load on a shared machine changes far less than the throughput.
  let cpuMs = 0;
  let served = 0;
  // The bare route's own CPU per request in the same rounds: the load-independent yardstick.
  let helloCpuMs = 0;
  let helloServed = 0;
  for (let i = 0; i < rounds; i++) {
    const h0 = helloPid === undefined ? 0 : cpuMsOf(helloPid);
    h.push(await load(hello, {}, seconds));
    if (helloPid !== undefined) {
      helloCpuMs += cpuMsOf(helloPid) - h0;
      helloServed += h[i].requests;
    }
    const c0 = latestPid === undefined ? 0 : cpuMsOf(latestPid);
    l.push(await load(latest, auth, seconds));
    if (latestPid !== undefined) {
      cpuMs += cpuMsOf(latestPid) - c0;
      served += l[i].requests;
    }
    if (control) c.push(await load(control, {}, seconds));
    h4.push(await load(hello, {}, seconds, 4));
    l4.push(await load(latest, auth, seconds, 4));
    if (control) c4.push(await load(control, {}, seconds, 4));
    const also = control ? `; control (a second bare route) ${c[i].rps}/s, p99 ${c4[i].p99} ms` : '';
    log(
      `round ${i + 1}/${rounds}: 64 conns hello ${h[i].rps}/s latest ${l[i].rps}/s; 4 conns p99 hello ${h4[i].p99} ms latest ${l4[i].p99} ms${also}`,
    );
  }
  const pick = (xs: R[]) => ({
    rps: median(xs.map((x) => x.rps)),
    p50: median(xs.map((x) => x.p50)),
    p99: median(xs.map((x) => x.p99)),
    errors: xs.reduce((a, x) => a + x.errors, 0),
    rounds: xs.map((x) => x.rps),
  });
  // Paired: each round's latest against the hello measured just before it, under the same load.
  const ratios = l.map((x, i) => x.rps / h[i].rps);
  const p99Ratios = l4.map((x, i) => x.p99 / h4[i].p99);
  // The A/A control: an identical bare route paired with hello the same way. Its ratios are what
  // this machine reports for two servers that cost the same: the noise floor of the figures above.
  const controlFigures = control
    ? {
        rps_ratio: round2(median(c.map((x, i) => x.rps / h[i].rps))),
        rps_ratio_rounds: c.map((x, i) => round2(x.rps / h[i].rps)),
        c4_p99_ratio: round2(median(c4.map((x, i) => x.p99 / h4[i].p99))),
        c4_p99_ratio_rounds: c4.map((x, i) => round2(x.p99 / h4[i].p99)),
      }
    : null;
  return {
    hello: pick(h),
    latest: pick(l),
    ratio: median(ratios),
    ratios,
    hello4: pick(h4),
    latest4: pick(l4),
    p99Ratio: median(p99Ratios),
    p99Ratios,
    control: controlFigures,
    cpuUsPerRequest: served > 0 ? round2((cpuMs * 1000) / served) : null,
    helloCpuUsPerRequest: helloServed > 0 ? round2((helloCpuMs * 1000) / helloServed) : null,
  };
}

const OPEN_LOOP = join(dirname(fileURLToPath(import.meta.url)), 'open-loop.js');

/** One open-loop run (open-loop.ts) in its own process: 64 connections at a fixed offered load. */
async function loadAtRate(url: string, headers: Record<string, string>, seconds: number, rate: number): Promise<OpenLoopResult> {
  const args = [OPEN_LOOP, url, String(rate), String(seconds), '64', ...Object.entries(headers).map(([k, v]) => `${k}=${v}`)];
  return nodeJson<OpenLoopResult>(args, 'open-loop');
}

/**
 * Latency at a fixed offered load below saturation. At saturation (the rounds above) 64 closed-loop
 * connections keep 64 requests queued, so latency is 64 / throughput by Little's law whatever a
 * request costs (p50 ≈ 4 ms at 16k/s). A latency target is about service time under a given load,
 * so the p99 target is judged here: both routes at the same offered `rate` over 64 connections,
 * requests due at a steady spacing and timed from when they were due (tools/bench/open-loop.ts).
 */
async function atRate(hello: string, latest: string, auth: Record<string, string>, seconds: number, rounds: number, rate: number) {
  const h: OpenLoopResult[] = [];
  const l: OpenLoopResult[] = [];
  for (let i = 0; i < rounds; i++) {
    h.push(await loadAtRate(hello, {}, seconds, rate));
    l.push(await loadAtRate(latest, auth, seconds, rate));
    log(
      `at ${rate}/s, round ${i + 1}/${rounds}: hello p50 ${h[i].p50_ms} p99 ${h[i].p99_ms} ms, latest p50 ${l[i].p50_ms} p99 ${l[i].p99_ms} ms (send lag p99 ${h[i].send_lag_p99_ms}/${l[i].send_lag_p99_ms} ms)`,
    );
  }
  const pick = (xs: OpenLoopResult[]) => ({
    rps: median(xs.map((x) => x.completed_rps)),
    p50: median(xs.map((x) => x.p50_ms)),
    p99: median(xs.map((x) => x.p99_ms)),
    p999: median(xs.map((x) => x.p999_ms)),
    errors: xs.reduce((a, x) => a + x.errors + x.non2xx, 0),
    // The generator's own lateness (timer ticks, its share of the CPU): the noise floor of the p99.
    sendLagP99: median(xs.map((x) => x.send_lag_p99_ms)),
  });
  return { hello: pick(h), latest: pick(l) };
}

function du(dir: string): number {
  return Number(execFileSync('du', ['-sb', dir]).toString().split('\t')[0]);
}

export async function run(): Promise<Record<string, unknown>> {
  const SMALL = envNum('PMTAPE_BENCH_API_SMALL', 100_000);
  const BIG = envNum('PMTAPE_BENCH_API_BIG', 10_000_000);
  const SECONDS = envNum('PMTAPE_BENCH_API_SECONDS', 5);
  const ROUNDS = Math.round(envNum('PMTAPE_BENCH_API_ROUNDS', 7));
  // First pages measured per history (after 20 warm-up pages, see firstPages): 1,000 makes the p99 the
  // tenth largest instead of the second largest of 200.
  const PAGES = Math.round(envNum('PMTAPE_BENCH_API_PAGES', 1000));
  const root = mkdtempSync(join(tmpdir(), 'pmtape-bench-api-'));
  const small = join(root, 'small');
  const big = join(root, 'big');
  const procs: ChildProcess[] = [];
  try {
    log(`generating ${SMALL} and ${BIG} records`);
    const t0Small = Date.now() - SMALL * STEP_MS;
    await generate(small, 'small', SMALL, t0Small);
    await generate(big, 'big', BIG, T0_PAST);
    const keySmall = (await createKey(small, 'paid', 'bench')).key;
    const keyBig = (await createKey(big, 'paid', 'bench')).key;
    // The histories just written are still being flushed by the kernel; writeback running beside the
    // first rounds slowed both servers there (and latest more). Measure once it is on disk.
    execFileSync('sync');

    // PMTAPE_BENCH_API_PAGES_ONLY=1: the first-page figures alone (read-path work on a shared machine).
    if (process.env.PMTAPE_BENCH_API_PAGES_ONLY === '1') {
      const loadBefore = loadavg()[0];
      const s = await serve(small);
      procs.push(s.proc);
      const pagesSmall = await firstPages(s.url, 'small', SMALL, t0Small, STEP_MS, keySmall, PAGES);
      await stop(s.proc);
      const b = await serve(big);
      procs.push(b.proc);
      const pagesBig = await firstPages(b.url, 'big', BIG, T0_PAST, STEP_MS, keyBig, PAGES);
      await stop(b.proc);
      return {
        load_avg_1m: { before: Math.round(loadBefore * 100) / 100, after: Math.round(loadavg()[0] * 100) / 100 },
        first_page: {
          small_records: SMALL,
          big_records: BIG,
          snapshot_levels: SNAPSHOT_LEVELS,
          pages: PAGES,
          small_p50_ms: pagesSmall.p50_ms,
          small_p99_ms: pagesSmall.p99_ms,
          big_p50_ms: pagesBig.p50_ms,
          big_p99_ms: pagesBig.p99_ms,
          small_cold_first_ms: pagesSmall.cold_first_ms,
          big_cold_first_ms: pagesBig.cold_first_ms,
          big_vs_small_p50: round2(pagesBig.p50_ms / pagesSmall.p50_ms),
          big_vs_small_p99: round2(pagesBig.p99_ms / pagesSmall.p99_ms),
        },
      };
    }

    // 1. hello vs latest, same connections and duration, servers in their own processes.
    WRK = ensureWrk(log);
    const loadBefore = loadavg()[0];
    const hello = await spawnReady(['--input-type=module', '-e', HELLO], {});
    procs.push(hello.proc);
    const helloUrl = `${hello.url}/hello`;
    const s = await serve(small);
    procs.push(s.proc);
    const auth = { authorization: `Bearer ${keySmall}` };
    const latestUrl = `${s.url}/v3/btc/markets/small/orderbook/latest`;
    if ((await fetch(latestUrl, { headers: auth })).status !== 200) throw new Error('latest route not answering 200');
    // A second bare route in its own process, measured in the same rounds (the A/A control).
    const hello2 = await spawnReady(['--input-type=module', '-e', HELLO], {});
    procs.push(hello2.proc);
    const live = await compare(helloUrl, latestUrl, auth, SECONDS, ROUNDS, `${hello2.url}/hello`, s.proc.pid, hello.proc.pid);
    await stop(hello2.proc);
    // The same rounds against `serve` in its default configuration (request log on, level info).
    const sd = await serve(small, 'default');
    procs.push(sd.proc);
    const defaults = await compare(
      helloUrl,
      `${sd.url}/v3/btc/markets/small/orderbook/latest`,
      auth,
      SECONDS,
      ROUNDS,
      undefined,
      sd.proc.pid,
      hello.proc.pid,
    );
    await stop(sd.proc);
    // CPU per request of the bare route over that of latest (both measured by process CPU time over
    // requests served in the same rounds): the throughput ratio the two would reach on an idle core,
    // which a shared machine's load moves far less than req/s (target ≥ 0.7 for the default config).
    const cpuRatio = (a: number | null, b: number | null): number | null => (a && b ? round2(a / b) : null);
    const defaultCpuVsHello = cpuRatio(defaults.helloCpuUsPerRequest, defaults.cpuUsPerRequest);
    const quietCpuVsHello = cpuRatio(live.helloCpuUsPerRequest, live.cpuUsPerRequest);
    log(
      `default configuration (request log on): latest ${defaults.latest.rps}/s, ${round2(defaults.ratio)}x hello; by CPU per request ${defaultCpuVsHello}x (quiet ${quietCpuVsHello}x)`,
    );
    // Half the throughput latest just sustained (PMTAPE_BENCH_API_RATE overrides): busy, not saturated.
    const rate = envNum('PMTAPE_BENCH_API_RATE', Math.max(1000, Math.floor(live.latest.rps / 2 / 500) * 500));
    const fixed = await atRate(helloUrl, latestUrl, auth, SECONDS, ROUNDS, rate);
    log(`hello ${live.hello.rps}/s, latest ${live.latest.rps}/s (medians of ${ROUNDS} rounds)`);
    const atRateFigures = {
      offered_rps: rate,
      connections: 64,
      latest_rps: fixed.latest.rps,
      latest_p50_ms: fixed.latest.p50,
      latest_p99_ms: fixed.latest.p99,
      latest_p999_ms: fixed.latest.p999,
      hello_rps: fixed.hello.rps,
      hello_p50_ms: fixed.hello.p50,
      hello_p99_ms: fixed.hello.p99,
      hello_p999_ms: fixed.hello.p999,
      generator_send_lag_p99_ms: { latest: fixed.latest.sendLagP99, hello: fixed.hello.sendLagP99 },
    };
    const latestFigures = {
      hello_rps: live.hello.rps,
      latest_rps: live.latest.rps,
      // The median over rounds of latest/hello (each pair measured back to back).
      latest_vs_hello: round2(live.ratio),
      latest_vs_hello_rounds: live.ratios.map(round2),
      // The same with `serve`'s default configuration (level info: a request log line per request).
      default_config: {
        latest_rps: defaults.latest.rps,
        hello_rps: defaults.hello.rps,
        latest_vs_hello: round2(defaults.ratio),
        latest_vs_hello_rounds: defaults.ratios.map(round2),
        c4_latest_p99_vs_hello: round2(defaults.p99Ratio),
        // Server CPU per latest request, default vs quiet (the request log's cost per request).
        cpu_us_per_request: defaults.cpuUsPerRequest,
        quiet_cpu_us_per_request: live.cpuUsPerRequest,
        cpu_per_request_vs_quiet:
          defaults.cpuUsPerRequest && live.cpuUsPerRequest ? round2(defaults.cpuUsPerRequest / live.cpuUsPerRequest) : null,
        // Load-independent: the bare route's CPU per request over latest's (same rounds), default and quiet.
        hello_cpu_us_per_request: defaults.helloCpuUsPerRequest,
        latest_vs_hello_by_cpu: defaultCpuVsHello,
        quiet_latest_vs_hello_by_cpu: quietCpuVsHello,
      },
      latest_p50_ms: live.latest.p50,
      latest_p99_ms: live.latest.p99,
      hello_p50_ms: live.hello.p50,
      hello_p99_ms: live.hello.p99,
      // Service time: 4 connections; the median over rounds of latest p99 / hello p99.
      c4: {
        latest_p50_ms: live.latest4.p50,
        latest_p99_ms: live.latest4.p99,
        hello_p50_ms: live.hello4.p50,
        hello_p99_ms: live.hello4.p99,
        latest_p99_vs_hello: round2(live.p99Ratio),
        latest_p99_vs_hello_rounds: live.p99Ratios.map(round2),
      },
      // The same pairing of two identical bare routes: how far this machine's ratios stray with no difference at all.
      a_a_control: live.control,
      latest_errors: live.latest.errors + live.latest4.errors + fixed.latest.errors,
    };

    // PMTAPE_BENCH_API_LATEST_ONLY=1 stops here (profiling the latest route).
    if (process.env.PMTAPE_BENCH_API_LATEST_ONLY === '1') {
      await stop(s.proc);
      await stop(hello.proc);
      return { generator: 'wrk', ...latestFigures, at_rate: atRateFigures, targets: TARGETS };
    }

    // Appends by another process (this one) reach the server by file events.
    const pushed = await appendToServed(small, s.url, 'small', keySmall, 100);
    log(`append to served: p50 ${pushed.p50_ms} ms, p99 ${pushed.p99_ms} ms, max ${pushed.max_ms} ms`);

    // 2 + 3. first pages and RSS on the small history, then the same on the big one.
    const pagesSmall = await firstPages(s.url, 'small', SMALL, t0Small, STEP_MS, keySmall, PAGES);
    const rssSmall = rssMb(s.proc.pid!);
    await stop(s.proc);
    const b = await serve(big);
    procs.push(b.proc);
    const pagesBig = await firstPages(b.url, 'big', BIG, T0_PAST, STEP_MS, keyBig, PAGES);
    // Latest of a market whose newest record is on a past day (no longer recorded), against hello
    // in the same alternating rounds.
    const pastUrl = `${b.url}/v3/btc/markets/big/orderbook/latest`;
    const past = await compare(helloUrl, pastUrl, { authorization: `Bearer ${keyBig}` }, SECONDS, ROUNDS);
    const rssBig = rssMb(b.proc.pid!);
    await stop(b.proc);
    await stop(hello.proc);
    const loadAfter = loadavg()[0];

    return {
      generator: 'wrk',
      ...latestFigures,
      // The open-loop generator at a fixed offered load (see atRate): latency without saturation.
      at_rate: atRateFigures,
      // Another process appends a book; the delay until latest shows it (file events; target ≤ 100 ms).
      append_to_served: pushed,
      latest_past_day_rps: past.latest.rps,
      latest_past_day_vs_hello: round2(past.ratio),
      latest_past_day_c4_p99_ms: past.latest4.p99,
      latest_errors_past_day: past.latest.errors + past.latest4.errors,
      connections: 64,
      rounds: {
        seconds: SECONDS,
        hello_rps: live.hello.rounds,
        latest_rps: live.latest.rounds,
        past_day_rps: past.latest.rounds,
        hello_rps_beside_past_day: past.hello.rounds,
      },
      load_avg_1m: { before: round2(loadBefore), after: round2(loadAfter) },
      pinning: PIN.generator === null ? 'off' : { generators_cpus: PIN.generator, servers_cpus: PIN.servers },
      first_page: {
        small_records: SMALL,
        big_records: BIG,
        snapshot_levels: SNAPSHOT_LEVELS,
        pages: PAGES,
        small_p50_ms: pagesSmall.p50_ms,
        small_p99_ms: pagesSmall.p99_ms,
        big_p50_ms: pagesBig.p50_ms,
        big_p99_ms: pagesBig.p99_ms,
        // The first page each fresh server answered (before the measured ones): one-time costs.
        small_cold_first_ms: pagesSmall.cold_first_ms,
        big_cold_first_ms: pagesBig.cold_first_ms,
        big_vs_small_p50: round2(pagesBig.p50_ms / pagesSmall.p50_ms),
        big_vs_small_p99: round2(pagesBig.p99_ms / pagesSmall.p99_ms),
      },
      rss: {
        small_history_bytes: du(small),
        big_history_bytes: du(big),
        small_rss_mb: rssSmall,
        big_rss_mb: rssBig,
        big_vs_small: round2(rssBig / rssSmall),
      },
      targets: TARGETS,
    };
  } finally {
    for (const p of procs) if (p.exitCode === null) p.kill('SIGKILL');
    rmSync(root, { recursive: true, force: true });
  }
}
