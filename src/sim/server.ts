// `pmtape sim`: one loopback HTTP + WebSocket server for every emulated upstream kind. Each kind is
// a mount under a path prefix (`/clob`, `/catalog`, `/yesno`, `/wallet`); the server applies the
// HTTP-level faults (429 + Retry-After, 5xx, slow answers) to every request and WS upgrade of every
// mount, and builds the recorder config pointing at all of them. Add a kind with one SIM_MOUNTS line.

import { createServer, type IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer } from 'ws';
import { FaultDice, parseFaults, rng } from './faults.js';
import { sendJson, type SimContext, type SimMount, type SimMountFactory, type SimOptions } from './mount.js';
import { coinVenueMounts } from './coin-venue.js';
import { yesnoMounts } from './yesno.js';
import { walletMounts } from './wallet.js';

/** Every emulated kind, one factory each. */
export const SIM_MOUNTS: SimMountFactory[] = [coinVenueMounts, yesnoMounts, walletMounts];

export interface Sim {
  readonly url: string;
  readonly port: number;
  /** A recorder config (JSON-able) pointing at this sim, timers scaled to `windowScale`. */
  readonly config: Record<string, unknown>;
  readonly mounts: readonly SimMount[];
  close(): Promise<void>;
}

function hashName(s: string): number {
  let h = 2166136261;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619);
  return h >>> 0;
}

/** Recorder timers scaled to the sim's window scale, so tests see lifecycles in seconds. */
export function scaledTuning(scale: number): Record<string, number> {
  const s = Math.min(1, Math.max(0.001, scale));
  const clamp = (v: number, lo: number, hi: number): number => Math.round(Math.min(hi, Math.max(lo, v)));
  return {
    ping_interval_ms: clamp(10_000 * s * 5, 300, 10_000),
    backoff_min_ms: clamp(250 * s * 5, 50, 250),
    backoff_max_ms: clamp(30_000 * s, 500, 30_000),
    catalog_poll_ms: clamp(5_000 * s * 5, 200, 5_000),
    lookahead_ms: clamp(3_600_000 * s, 60_000 * s * 3, 3_600_000),
    resolve_horizon_ms: clamp(1_800_000 * s, 5_000, 1_800_000),
    status_interval_ms: 2_000,
  };
}

export async function startSim(opts: SimOptions = {}): Promise<Sim> {
  const seed = opts.seed ?? 1;
  const faults = typeof opts.faults === 'string' || opts.faults === undefined ? parseFaults(opts.faults) : opts.faults;
  const windowScale = opts.windowScale ?? 1;
  if (!(windowScale > 0 && windowScale <= 1)) throw new Error(`--window-scale must be in (0, 1], got ${windowScale}`);
  const ctx: SimContext = {
    opts,
    seed,
    faults,
    windowScale,
    now: opts.now ?? Date.now,
    random: (name) => rng(seed ^ hashName(name)),
    dice: (name) => new FaultDice(faults, rng((seed * 31) ^ hashName(`dice:${name}`))),
  };
  const mounts = SIM_MOUNTS.flatMap((f) => f(ctx));
  const httpDice = ctx.dice('http');
  const find = (pathname: string): { mount: SimMount; rest: string } | null => {
    for (const m of mounts) {
      if (pathname === m.prefix || pathname.startsWith(`${m.prefix}/`)) return { mount: m, rest: pathname.slice(m.prefix.length) || '/' };
    }
    return null;
  };

  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://sim');
    const hit = find(url.pathname);
    if (!hit?.mount.http) return sendJson(res, 404, { error: 'not found' });
    const go = async (): Promise<void> => {
      const f = hit.mount.noHttpFaults ? null : httpDice.http();
      if (f && 'status' in f) {
        if (f.status === 429) return sendJson(res, 429, { error: 'Too Many Requests' }, { 'retry-after': String(f.retryAfterS) });
        return sendJson(res, f.status, { error: 'upstream trouble' });
      }
      if (f && 'delayMs' in f) await new Promise((r) => setTimeout(r, f.delayMs));
      const handled = await hit.mount.http!(req, res, hit.rest, url);
      if (!handled && !res.headersSent) sendJson(res, 404, { error: 'not found' });
    };
    go().catch((e: unknown) => {
      if (!res.headersSent) sendJson(res, 500, { error: (e as Error).message });
    });
  });
  server.keepAliveTimeout = 1000;

  const wss = new WebSocketServer({ noServer: true, perMessageDeflate: false });
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    // Node hands the upgraded socket over without an error listener: a client that resets while it
    // is refused (a 429 fault) would otherwise throw ECONNRESET out of the emulator.
    socket.on('error', () => socket.destroy());
    const url = new URL(req.url ?? '/', 'http://sim');
    const hit = find(url.pathname);
    const refuse = (status: number, extra = ''): void => {
      socket.end(
        `HTTP/1.1 ${status} ${status === 429 ? 'Too Many Requests' : 'Error'}\r\n${extra}Connection: close\r\nContent-Length: 0\r\n\r\n`,
      );
    };
    if (!hit?.mount.ws) return refuse(404);
    const f = hit.mount.noHttpFaults ? null : httpDice.http();
    if (f && 'status' in f) return refuse(f.status, f.status === 429 ? `Retry-After: ${f.retryAfterS}\r\n` : '');
    wss.handleUpgrade(req, socket, head, (ws) => hit.mount.ws!(ws, req, hit.rest));
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, opts.host ?? '127.0.0.1', () => resolve());
  });
  const addr = server.address();
  const port = typeof addr === 'object' && addr ? addr.port : 0;
  const url = `http://${opts.host ?? '127.0.0.1'}:${port}`;

  const upstreams: Record<string, unknown> = {};
  const config: Record<string, unknown> = {};
  for (const m of mounts) {
    const c = m.config?.(url);
    if (!c) continue;
    Object.assign(upstreams, c.upstreams ?? {});
    for (const [k, v] of Object.entries(c)) if (k !== 'upstreams') config[k] = v;
  }
  const tuning = scaledTuning(windowScale);
  config.upstreams = upstreams;
  config.recorders = { ...tuning, ...(config.recorders ?? {}) };
  if (config.stale_after_ms === undefined) config.stale_after_ms = Math.max(1000, tuning.ping_interval_ms * 3);

  return {
    url,
    port,
    config,
    mounts,
    async close() {
      for (const m of mounts) m.close?.();
      for (const c of wss.clients) c.terminate();
      wss.close();
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
