// Shared fixtures of the stream tests: a real server on port 0 (the whole API, or just the stream
// plugin over the read side's services), a books writer in a child process, ws test clients and
// catalogue entries written through the real storage writer.

import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import Fastify, { type FastifyInstance } from 'fastify';
import WebSocket from 'ws';
import { loadConfig } from '../../src/config.js';
import { createKey, KeyStore } from '../../src/api/plugins/keys.js';
import { MarketsIndex } from '../../src/api/query/markets-index.js';
import streamPlugin, { type StreamSettings } from '../../src/api/stream/route.js';
import type { Market } from '../../src/schema/market.js';
import type { Family, Observation } from '../../src/schema/observation.js';
import { openWriter } from '../../src/storage/index.js';

interface Tap {
  teardown(fn: () => unknown): void;
}

export const here = dirname(fileURLToPath(import.meta.url));

export function tempDir(t: Tap): string {
  const dir = mkdtempSync(join(tmpdir(), 'pmtape-stream-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

export interface Server {
  readonly app: FastifyInstance;
  readonly port: number;
  readonly wsUrl: string;
  readonly httpUrl: string;
}

/**
 * Starts a server on an ephemeral loopback port. `full` builds the whole API (REST routes too);
 * otherwise only the stream plugin runs over the same services, so these tests do not depend on
 * unrelated routes.
 */
export async function startServer(
  t: Tap,
  dataDir: string,
  opts: { settings?: Partial<StreamSettings>; full?: boolean } = {},
): Promise<Server> {
  const config = loadConfig({ dataDir, port: 0 }, { PMTAPE_RATE_LIMITS: 'off' });
  let app: FastifyInstance;
  if (opts.full) {
    const { buildApp } = await import('../../src/api/app.js');
    app = await buildApp({ config, keyPollMs: 50, logger: false });
  } else {
    app = Fastify({ logger: process.env.STREAM_TEST_LOG ? { level: 'warn' } : false });
    const keys = new KeyStore(dataDir, 50);
    await keys.start();
    app.decorate('pmtape', { config, keys, markets: new MarketsIndex(dataDir, 100) } as unknown as FastifyInstance['pmtape']);
    app.addHook('onClose', async () => keys.stop());
    await app.register(streamPlugin, { prefix: '/v3', settings: opts.settings });
  }
  await app.listen({ port: 0, host: '127.0.0.1' });
  t.teardown(() => app.close());
  const port = (app.server.address() as { port: number }).port;
  return { app, port, wsUrl: `ws://127.0.0.1:${port}/v3/stream`, httpUrl: `http://127.0.0.1:${port}` };
}

export async function makeKeys(dataDir: string): Promise<{ free: string; paid: string; freeId: string; paidId: string }> {
  const f = await createKey(dataDir, 'free', 'free-test');
  const p = await createKey(dataDir, 'paid', 'paid-test');
  return { free: f.key, paid: p.key, freeId: f.record.id, paidId: p.record.id };
}

/** A books writer in another process; `send` resolves with the seq of the last record written. */
export class ChildWriter {
  private readonly lines: string[] = [];
  private waiters: ((l: string) => void)[] = [];
  private stderr = '';
  private constructor(readonly proc: ChildProcessWithoutNullStreams) {
    createInterface({ input: proc.stdout }).on('line', (l) => {
      const w = this.waiters.shift();
      if (w) w(l);
      else this.lines.push(l);
    });
    proc.stderr.on('data', (d: Buffer) => (this.stderr = (this.stderr + d.toString()).slice(-2000)));
    // A writer that dies answers every pending and later command with its error, never a hang.
    proc.on('exit', (code, signal) => {
      const why = `exited (${code ?? signal}): ${this.stderr}`;
      for (const w of this.waiters.splice(0)) w(why);
      this.lines.push(why);
    });
  }

  static async start(t: Tap, dataDir: string, family: Family, market: string): Promise<ChildWriter> {
    const proc = spawn(process.execPath, [join(here, 'stream-writer-child.js'), dataDir, family, market], {
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const w = new ChildWriter(proc);
    t.teardown(() => {
      if (proc.exitCode === null) proc.kill('SIGKILL');
    });
    const first = await w.line();
    if (first !== 'ready') throw new Error(`writer said ${first}`);
    return w;
  }

  private line(): Promise<string> {
    const l = this.lines.shift();
    if (l !== undefined) return Promise.resolve(l);
    return new Promise((r) => this.waiters.push(r));
  }

  async send(cmd: object): Promise<number> {
    this.proc.stdin.write(JSON.stringify(cmd) + '\n');
    const l = await this.line();
    if (!/^\d+$/.test(l)) throw new Error(`writer: ${l}`);
    return Number(l);
  }

  append(...obs: Observation[]): Promise<number> {
    return this.send({ op: 'append', obs });
  }
}

/** A ws client that records every message; `waitFor` scans past and future messages. */
export class TestClient {
  readonly msgs: Record<string, unknown>[] = [];
  readonly closed: Promise<{ code: number; reason: string }>;
  private listeners: (() => void)[] = [];

  private constructor(readonly ws: WebSocket) {
    ws.on('message', (d) => {
      this.msgs.push(JSON.parse((d as Buffer).toString()) as Record<string, unknown>);
      for (const l of this.listeners) l();
    });
    this.closed = new Promise((r) => ws.on('close', (code, reason) => r({ code, reason: reason.toString() })));
  }

  static connect(t: Tap, url: string, key?: string, via: 'header' | 'query' = 'header'): Promise<TestClient> {
    const u = key && via === 'query' ? `${url}?api_key=${encodeURIComponent(key)}` : url;
    const ws = new WebSocket(u, { headers: key && via === 'header' ? { authorization: `Bearer ${key}` } : {} });
    t.teardown(() => ws.terminate());
    return new Promise((resolve, reject) => {
      ws.once('open', () => resolve(new TestClient(ws)));
      ws.once('unexpected-response', (_req, res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () =>
          reject(Object.assign(new Error(`upgrade refused ${res.statusCode}`), { status: res.statusCode, body: JSON.parse(body) })),
        );
      });
      ws.once('error', reject);
    });
  }

  send(obj: unknown): void {
    this.ws.send(typeof obj === 'string' ? obj : JSON.stringify(obj));
  }

  waitFor(pred: (m: Record<string, unknown>) => boolean, timeoutMs = 15_000): Promise<Record<string, unknown>> {
    let i = 0;
    return new Promise((resolve, reject) => {
      const check = (): boolean => {
        for (; i < this.msgs.length; i++) if (pred(this.msgs[i])) return (resolve(this.msgs[i]), true);
        return false;
      };
      if (check()) return;
      const timer = setTimeout(() => {
        this.listeners = this.listeners.filter((l) => l !== fn);
        reject(new Error(`timed out after ${this.msgs.length} messages; last: ${JSON.stringify(this.msgs.at(-1)).slice(0, 300)}`));
      }, timeoutMs);
      const fn = (): void => {
        if (check()) {
          clearTimeout(timer);
          this.listeners = this.listeners.filter((l) => l !== fn);
        }
      };
      this.listeners.push(fn);
    });
  }

  /** Waits until a message with `seq` ≥ s has arrived. */
  waitSeq(s: number, timeoutMs?: number): Promise<Record<string, unknown>> {
    return this.waitFor((m) => typeof m.seq === 'number' && m.seq >= s, timeoutMs);
  }

  seqs(type = 'book'): number[] {
    return this.msgs.filter((m) => m.type === type).map((m) => m.seq as number);
  }
}

export { coinMarket, walletMarket, yesnoMarket } from '../../tools/fixtures/markets.js';

/** Writes a catalogue entry through the real writer (as the catalogue recorder would). */
export async function writeCatalog(dataDir: string, m: Market): Promise<void> {
  const w = await openWriter(dataDir, { family: m.family, stream: 'catalog', market: m.market_id });
  await w.append({ type: 'catalog', recv_ts: Date.now(), source_ts: null, event: 'listed', changed: [], market: m });
  await w.close();
}

export const bookObs = (token: string, recv: number, bids: [string, string][], asks: [string, string][]): Observation => ({
  type: 'book',
  recv_ts: recv,
  source_ts: recv - 5,
  token_id: token,
  units: 'decimal',
  bids,
  asks,
});

export const deltaObs = (token: string, recv: number, side: 'bid' | 'ask', price: string, size: string): Observation => ({
  type: 'book_delta',
  recv_ts: recv,
  source_ts: null,
  token_id: token,
  changes: [{ side, price, size }],
});

export const gapObs = (
  recv: number,
  start: number,
  end: number | null,
  reason: 'disconnected' | 'sequence_gap' = 'disconnected',
): Observation => ({ type: 'gap', recv_ts: recv, source_ts: null, reason, start_ts: start, end_ts: end });

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
