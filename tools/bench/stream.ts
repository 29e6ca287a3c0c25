// `npm run bench -- stream`: append-to-client latency of the live stream with 1, 100 and 1,000
// subscribers of one market, messages/s delivered in a burst, and the server's RSS. The server is a
// real `pmtape serve` child process; the writer and the ws clients live here. Baseline, same run:
// the storage floor, i.e. append-to-reader latency of a plain `follow()` on the same log.

import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import WebSocket from 'ws';
import { createKey } from '../../src/api/plugins/keys.js';
import type { CoinMarket } from '../../src/schema/market.js';
import type { Observation } from '../../src/schema/observation.js';
import { openReader, openWriter, type LogWriter } from '../../src/storage/index.js';
import { coinMarket } from '../fixtures/markets.js';

const CLI = join(dirname(fileURLToPath(import.meta.url)), '../../cli.js');
const RATE_PER_S = 20;
const SCENARIO_MS = 5000;
const SEQ_RE = /"seq":(\d+)/;

const log = (s: string): void => void process.stderr.write(`stream bench: ${s}\n`);
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

function pct(xs: number[], p: number): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return Math.round(s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] * 100) / 100;
}

const market: CoinMarket = coinMarket('bench-1', {
  event_id: null,
  condition_id: '0xbench',
  slug: 'bench-1',
  question: 'Bench?',
  outcomes: [
    { label: 'Up', token_id: 'bench-up' },
    { label: 'Down', token_id: 'bench-down' },
  ],
  start_time: null,
});

/** A realistic book: 10 levels a side. */
const ladder = (p0: number, step: number): [string, string][] =>
  Array.from({ length: 10 }, (_, i) => [(p0 + step * i).toFixed(2), String(100 + i)]);

class Appender {
  /** performance.now() at each append call, by the seq it will get (one writer: seqs are consecutive). */
  readonly sentAt = new Map<number, number>();
  private next: number;
  private i = 0;
  constructor(private readonly w: LogWriter) {
    this.next = (w.lastRecord()?.seq ?? 0) + 1;
  }
  append(): Promise<unknown> {
    const obs: Observation = {
      type: 'book_delta',
      recv_ts: Date.now(),
      source_ts: null,
      token_id: this.i % 2 ? 'bench-up' : 'bench-down',
      changes: [{ side: 'bid', price: '0.40', size: String(100 + (this.i++ % 90)) }],
    };
    this.sentAt.set(this.next++, performance.now());
    return this.w.append(obs);
  }
  get lastSeq(): number {
    return this.next - 1;
  }
}

function startServer(dataDir: string): Promise<{ proc: ChildProcess; url: string }> {
  const proc = spawn(process.execPath, [CLI, 'serve', '--data-dir', dataDir, '--port', '0'], {
    env: { ...process.env, PMTAPE_RATE_LIMITS: 'off', PMTAPE_LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    createInterface({ input: proc.stdout }).on('line', (l) => {
      const m = /^ready (\S+)/.exec(l);
      if (m) resolve({ proc, url: m[1].replace(/^http/, 'ws') + '/v3/stream' });
    });
    proc.once('exit', (code) => reject(new Error(`serve exited with ${code}`)));
  });
}

const rssMb = (pid: number, field = 'VmRSS'): number => {
  const m = new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Math.round(Number(m[1]) / 102.4) / 10 : NaN;
};

/** CPU seconds (user + system) a process has used, from /proc. */
const cpuS = (pid: number): number => {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(f[11]) + Number(f[12])) / 100;
};
/** Kernel-side share of that (loopback TCP sends are mostly kernel work). */
const sysS = (pid: number): number => Number(readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')[12]) / 100;

interface Clients {
  readonly sockets: { terminate(): void }[];
  /** Latencies (ms) measured by the sampling clients. */
  readonly lat: number[];
  /** Newest seq seen by each sampling client. */
  readonly lastSeen: number[];
  /** Book frames received by each sink client. */
  readonly sinkFrames: number[];
  delivered: number;
}

/** How many subscribers measure latency with a full ws client; the rest are cheap raw sinks. */
const SAMPLERS = 20;
const SUBSCRIBE = JSON.stringify({ op: 'subscribe', id: 1, channel: 'book', family: 'coin', coin: 'btc', market_id: 'bench-1' });

/** A client→server text frame, masked with a zero key (legal; the payload stays as is). */
function clientFrame(text: string): Buffer {
  const p = Buffer.from(text);
  const head =
    p.length < 126
      ? Buffer.from([0x81, 0x80 | p.length, 0, 0, 0, 0])
      : Buffer.from([0x81, 0x80 | 126, p.length >> 8, p.length & 255, 0, 0, 0, 0]);
  return Buffer.concat([head, p]);
}

/**
 * A subscriber that reads every frame off a raw upgraded socket and only counts them: real
 * server-side load (one socket, every message written) at a fraction of a ws client's cost here,
 * so the benchmark measures the server rather than a thousand client parsers in one process.
 */
function sink(url: string, key: string, c: Clients, idx: number): Promise<void> {
  const u = new URL(url.replace(/^ws/, 'http'));
  return new Promise((resolve, reject) => {
    const req = httpRequest({
      host: u.hostname,
      port: u.port,
      path: u.pathname,
      headers: {
        Connection: 'Upgrade',
        Upgrade: 'websocket',
        'Sec-WebSocket-Version': '13',
        'Sec-WebSocket-Key': randomBytes(16).toString('base64'),
        authorization: `Bearer ${key}`,
      },
    });
    req.on('upgrade', (_res, socket) => {
      c.sockets.push({ terminate: () => socket.destroy() });
      let buf: Buffer = Buffer.alloc(0);
      socket.on('data', (chunk: Buffer) => {
        buf = buf.length ? Buffer.concat([buf, chunk]) : chunk;
        for (;;) {
          if (buf.length < 2) break;
          let len = buf[1] & 0x7f;
          let hdr = 2;
          if (len === 126) {
            if (buf.length < 4) break;
            len = buf.readUInt16BE(2);
            hdr = 4;
          } else if (len === 127) {
            if (buf.length < 10) break;
            len = Number(buf.readBigUInt64BE(2));
            hdr = 10;
          }
          if (buf.length < hdr + len) break;
          if ((buf[0] & 0x0f) === 1 && buf[hdr + 2] === 0x74 && buf[hdr + 9] === 0x62) {
            // {"type":"book"...: count book frames only
            c.sinkFrames[idx]++;
            c.delivered++;
            if (c.sinkFrames[idx] === 1) resolve();
          }
          buf = buf.subarray(hdr + len);
        }
      });
      socket.on('error', () => undefined);
      socket.write(clientFrame(SUBSCRIBE));
    });
    req.on('response', (res) => reject(new Error(`stream upgrade refused with ${res.statusCode}`)));
    req.on('error', reject);
    req.end();
  });
}

function sampler(url: string, key: string, c: Clients, idx: number, app: Appender): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const ws = new WebSocket(url, { headers: { authorization: `Bearer ${key}` }, perMessageDeflate: false });
    ws.on('message', (data: Buffer) => {
      const m = SEQ_RE.exec(data.toString('latin1', 0, 64));
      if (!m) return;
      const seq = Number(m[1]);
      const sent = app.sentAt.get(seq);
      if (sent !== undefined) c.lat.push(performance.now() - sent);
      c.delivered++;
      c.lastSeen[idx] = seq;
      resolve();
    });
    ws.once('open', () => ws.send(SUBSCRIBE));
    ws.once('error', reject);
    c.sockets.push(ws);
  });
}

async function connect(url: string, key: string, n: number, app: Appender): Promise<Clients> {
  const samplers = Math.min(n, SAMPLERS);
  const c: Clients = {
    sockets: [],
    lat: [],
    lastSeen: new Array<number>(samplers).fill(0),
    sinkFrames: new Array<number>(n - samplers).fill(0),
    delivered: 0,
  };
  for (let i = 0; i < n; i += 50) {
    await Promise.all(
      Array.from({ length: Math.min(50, n - i) }, (_, k) => {
        const idx = i + k;
        return idx < samplers ? sampler(url, key, c, idx, app) : sink(url, key, c, idx - samplers);
      }),
    );
  }
  return c;
}

/** True once every sampler saw `seq` and every sink counted `frames` book frames. */
async function waitAll(c: Clients, seq: number, frames: number, timeoutMs: number): Promise<boolean> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    if (c.lastSeen.every((s) => s >= seq) && c.sinkFrames.every((f) => f >= frames)) return true;
    await sleep(10);
  }
  return false;
}

/** Appends at RATE_PER_S for SCENARIO_MS; returns the last seq. */
async function paced(app: Appender, ms = SCENARIO_MS): Promise<number> {
  const n = Math.round((ms / 1000) * RATE_PER_S);
  const start = performance.now();
  for (let i = 0; i < n; i++) {
    const due = start + (i * 1000) / RATE_PER_S;
    const wait = due - performance.now();
    if (wait > 0) await sleep(wait);
    void app.append();
  }
  return app.lastSeq;
}

export async function run(): Promise<Record<string, unknown>> {
  const dir = mkdtempSync(join(tmpdir(), 'pmtape-bench-stream-'));
  let server: ChildProcess | null = null;
  try {
    const { key } = await createKey(dir, 'paid', 'bench');
    const cat = await openWriter(dir, { family: 'coin', stream: 'catalog', market: 'bench-1' });
    await cat.append({ type: 'catalog', recv_ts: Date.now(), source_ts: null, event: 'listed', changed: [], market });
    await cat.close();
    // Group commit as tight as a recorder would run it for low latency; the floor below includes it.
    const w = await openWriter(dir, { family: 'coin', stream: 'books', market: 'bench-1' }, { fsyncIntervalMs: 2 });
    const now = Date.now();
    await w.append({
      type: 'book',
      recv_ts: now,
      source_ts: null,
      token_id: 'bench-up',
      units: 'decimal',
      bids: ladder(0.4, -0.01),
      asks: ladder(0.6, 0.01),
    });
    await w.append({
      type: 'book',
      recv_ts: now,
      source_ts: null,
      token_id: 'bench-down',
      units: 'decimal',
      bids: ladder(0.39, -0.01),
      asks: ladder(0.61, 0.01),
    });
    const app = new Appender(w);
    const s = await startServer(dir);
    server = s.proc;
    log(`server pid ${server.pid} at ${s.url}`);

    // Baseline: the same appends seen by a plain follower of the log (no WebSocket, no shaping).
    const ac = new AbortController();
    const floor: number[] = [];
    const follower = (async () => {
      for await (const it of openReader(dir, { family: 'coin', stream: 'books', market: 'bench-1' }).follow('end', ac.signal)) {
        const t = app.sentAt.get(it.rec.seq);
        if (t !== undefined) floor.push(performance.now() - t);
      }
    })();
    await sleep(200);
    await paced(app, 3000);
    await sleep(300);
    ac.abort();
    await follower.catch(() => undefined);
    const baseline = { p50_ms: pct(floor, 50), p99_ms: pct(floor, 99), samples: floor.length };
    log(`floor p50 ${baseline.p50_ms} ms p99 ${baseline.p99_ms} ms`);

    const scenarios: Record<string, unknown> = {};
    for (const n of [1, 100, 1000]) {
      const c = await connect(s.url, key, n, app);
      await waitAll(c, 1, 1, 30_000);
      c.lat.length = 0;
      c.delivered = 0;
      const first = app.lastSeq;
      const t0 = performance.now();
      const cpu0 = cpuS(server.pid!);
      const sys0 = sysS(server.pid!);
      const own0 = process.cpuUsage();
      const last = await paced(app);
      const complete = await waitAll(c, last, 1 + last - first, 30_000);
      const secs = (performance.now() - t0) / 1000;
      scenarios[`subscribers_${n}`] = {
        p50_ms: pct(c.lat, 50),
        p99_ms: pct(c.lat, 99),
        max_ms: pct(c.lat, 100),
        messages: c.delivered,
        messages_per_s: Math.round(c.delivered / secs),
        complete,
        server_cpu_us_per_message: Math.round(((cpuS(server.pid!) - cpu0) * 1e6) / Math.max(1, c.delivered)),
        server_kernel_share: Math.round(((sysS(server.pid!) - sys0) / Math.max(0.01, cpuS(server.pid!) - cpu0)) * 100) / 100,
        clients_cpu_us_per_message: Math.round(((u) => u.user + u.system)(process.cpuUsage(own0)) / Math.max(1, c.delivered)),
        server_rss_mb: rssMb(server.pid!),
        p99_vs_floor: Math.round((pct(c.lat, 99) / baseline.p99_ms) * 10) / 10,
      };
      log(`${n} subscribers: ${JSON.stringify(scenarios[`subscribers_${n}`])}`);
      for (const ws of c.sockets) ws.terminate();
      await sleep(300);
    }

    // Throughput: a burst of appends as fast as the writer takes them, fanned out to 100 clients.
    const c = await connect(s.url, key, 100, app);
    await waitAll(c, 1, 1, 30_000);
    c.delivered = 0;
    const first = app.lastSeq;
    const t0 = performance.now();
    const cpu0 = cpuS(server.pid!);
    const burst: Promise<unknown>[] = [];
    for (let i = 0; i < 2000; i++) burst.push(app.append());
    await Promise.all(burst);
    const complete = await waitAll(c, app.lastSeq, 1 + app.lastSeq - first, 60_000);
    const secs = (performance.now() - t0) / 1000;
    const throughput = {
      subscribers: 100,
      records: 2000,
      messages: c.delivered,
      messages_per_s: Math.round(c.delivered / secs),
      complete,
      server_cpu_us_per_message: Math.round(((cpuS(server.pid!) - cpu0) * 1e6) / Math.max(1, c.delivered)),
      server_rss_mb: rssMb(server.pid!),
    };
    log(`burst: ${JSON.stringify(throughput)}`);
    for (const ws of c.sockets) ws.terminate();
    await w.close();
    const p99At1000 = (scenarios.subscribers_1000 as { p99_ms: number }).p99_ms;
    return {
      note: 'latency = append() call in the writer to receipt by a client; clients 1..20 are ws clients measuring it, the rest raw sockets reading every frame',
      load_average_1m: Math.round(loadavg()[0] * 10) / 10,
      cpus: cpus().length,
      rate_per_s: RATE_PER_S,
      floor_follow: baseline,
      ...scenarios,
      burst: throughput,
      server_peak_rss_mb: rssMb(server.pid!, 'VmHWM'),
      target_p99_1000_ms: 50,
      meets_target: p99At1000 < 50,
    };
  } finally {
    server?.kill('SIGTERM');
    await sleep(200);
    rmSync(dir, { recursive: true, force: true });
  }
}
