// An open-loop HTTP/1.1 load generator for latency at a fixed offered load, run as its own process:
//   node open-loop.js <url> <rate/s> <seconds> <connections> [Header=value ...]
// prints one JSON object. Requests are due at a steady 1/rate spacing whatever the server does,
// over `connections` keep-alive sockets; a request that finds every socket busy waits for one, and
// its latency counts from when it was due (the server's backlog is not hidden: no coordinated
// omission). A request sent as soon as it was due counts from its send: this process's timers tick
// about once a millisecond, and that lateness (reported as send_lag) is not the server's.
// autocannon's `-R` cannot stand in for this: it sends each second's quota back to back and then
// idles (bursts of 64 in flight), and it pads its histogram as if a request were due every millisecond.

import { connect, type Socket } from 'node:net';
import { performance } from 'node:perf_hooks';

interface Conn {
  socket: Socket;
  /** When the request in flight is timed from (ms, performance clock), or null when idle. */
  from: number | null;
  buf: Buffer;
  /** Closed by an error or by the server: never idle again. */
  dead: boolean;
}

export interface OpenLoopResult {
  offered_rps: number;
  completed_rps: number;
  p50_ms: number;
  p99_ms: number;
  p999_ms: number;
  max_ms: number;
  /** How late this process sent requests past their due time (its timer ticks, or a busy socket). */
  send_lag_p99_ms: number;
  non2xx: number;
  errors: number;
}

const quantile = (sorted: Float64Array, q: number): number =>
  sorted.length === 0 ? NaN : Math.round(sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] * 1000) / 1000;

export async function openLoop(
  target: string,
  rate: number,
  seconds: number,
  connections: number,
  headers: Record<string, string>,
  warmupSeconds = 1,
): Promise<OpenLoopResult> {
  const url = new URL(target);
  const head = [`GET ${url.pathname}${url.search} HTTP/1.1`, `host: ${url.host}`, 'connection: keep-alive'];
  for (const [k, v] of Object.entries(headers)) head.push(`${k}: ${v}`);
  const request = Buffer.from(`${head.join('\r\n')}\r\n\r\n`, 'latin1');
  const latencies: number[] = [];
  const lags: number[] = [];
  let non2xx = 0;
  let errors = 0;
  let lost = 0; // dead sockets
  let measuring = false;
  const waiting: number[] = []; // due times of requests that found no idle socket
  const idle: Conn[] = [];

  /** `waited`: the request found every socket busy, so it is timed from when it was due. */
  const send = (c: Conn, due: number, waited: boolean): void => {
    const now = performance.now();
    c.from = waited ? due : now;
    if (measuring) lags.push(now - due);
    c.socket.write(request);
  };
  const finish = (c: Conn, status: number): void => {
    const now = performance.now();
    if (c.from === null) return fail(c); // a response nobody asked for
    if (measuring) {
      latencies.push(now - c.from);
      if (status < 200 || status > 299) non2xx++;
    }
    c.from = null;
    const next = waiting.shift();
    if (next !== undefined) send(c, next, true);
    else idle.push(c);
  };
  const fail = (c: Conn): void => {
    if (c.dead) return;
    c.dead = true;
    lost++;
    if (c.from !== null && measuring) errors++;
    const i = idle.indexOf(c);
    if (i >= 0) idle.splice(i, 1);
    c.from = null;
    c.buf = Buffer.alloc(0);
    c.socket.destroy();
  };
  /** Consumes whole responses from c.buf (Content-Length bodies, as Fastify sends JSON). */
  const onData = (c: Conn, chunk: Buffer): void => {
    c.buf = c.buf.length === 0 ? chunk : Buffer.concat([c.buf, chunk]);
    for (;;) {
      const end = c.buf.indexOf('\r\n\r\n');
      if (end < 0) return;
      const text = c.buf.toString('latin1', 0, end);
      const m = /\r\ncontent-length:\s*(\d+)/i.exec(text);
      if (!m) {
        // Not a response this generator can frame (chunked, or not HTTP): count it, drop the socket.
        fail(c);
        return;
      }
      const total = end + 4 + Number(m[1]);
      if (c.buf.length < total) return;
      const status = Number(text.slice(9, 12));
      c.buf = c.buf.subarray(total);
      finish(c, status);
    }
  };

  const conns = await Promise.all(
    Array.from(
      { length: connections },
      () =>
        new Promise<Conn>((resolve, reject) => {
          const socket = connect(Number(url.port), url.hostname);
          socket.setNoDelay(true);
          const c: Conn = { socket, from: null, buf: Buffer.alloc(0), dead: false };
          socket.once('connect', () => resolve(c));
          socket.once('error', reject);
          socket.on('data', (b: Buffer) => onData(c, b));
        }),
    ),
  );
  for (const c of conns) {
    c.socket.removeAllListeners('error');
    c.socket.on('error', () => fail(c));
    c.socket.on('close', () => fail(c));
    idle.push(c);
  }

  const interval = 1000 / rate;
  const run = (ms: number): Promise<void> =>
    new Promise((resolve) => {
      const start = performance.now();
      let next = start;
      const tick = (): void => {
        const now = performance.now();
        const stopAt = start + ms;
        while (next <= now && next < stopAt) {
          const c = idle.pop();
          if (c) send(c, next, false);
          else waiting.push(next);
          next += interval;
        }
        if (next < stopAt) setTimeout(tick, Math.max(0, Math.min(1, next - performance.now())));
        else resolve();
      };
      tick();
    });
  await run(warmupSeconds * 1000);
  measuring = true;
  await run(seconds * 1000);
  // Let the requests due in the window finish (bounded), then stop counting.
  const deadline = performance.now() + 5000;
  while ((waiting.length > 0 || idle.length < conns.length - lost) && lost < conns.length && performance.now() < deadline)
    await new Promise((r) => setTimeout(r, 5));
  measuring = false;
  for (const c of conns) c.socket.destroy();
  const lat = Float64Array.from(latencies).sort();
  const lag = Float64Array.from(lags).sort();
  return {
    offered_rps: rate,
    completed_rps: Math.round(latencies.length / seconds),
    p50_ms: quantile(lat, 0.5),
    p99_ms: quantile(lat, 0.99),
    p999_ms: quantile(lat, 0.999),
    max_ms: quantile(lat, 1),
    send_lag_p99_ms: quantile(lag, 0.99),
    non2xx,
    errors,
  };
}

if (process.argv[1] && /open-loop\.js$/.test(process.argv[1])) {
  const [target, rate, seconds, connections, ...hs] = process.argv.slice(2);
  const headers: Record<string, string> = {};
  for (const h of hs) {
    const i = h.indexOf('=');
    headers[h.slice(0, i)] = h.slice(i + 1);
  }
  const r = await openLoop(target, Number(rate), Number(seconds), Number(connections), headers);
  process.stdout.write(`${JSON.stringify(r)}\n`);
}
