// The `wallet` venue emulator: topic/market catalogue, REST books and metric samples, and the
// order-book WebSocket of ../shared/venues/wallet.md (subscribe/unsubscribe/heartbeat requests,
// server heartbeats that must be echoed, full-snapshot pushes delivered unordered and duplicated).

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { WebSocket } from 'ws';
import type { FaultDice } from './faults.js';
import { rng, hashSeed } from './yesno-market.js';
import type { SimContext, SimMount } from './mount.js';
import { WalletUniverse, EXCHANGE_CONTRACT, type WalletSimMarket } from './wallet-market.js';

export interface WalletSimOptions {
  readonly seed?: number;
  readonly windowScale?: number;
  readonly coins?: readonly string[];
  readonly windows?: readonly string[];
  /** Server heartbeat period; a client that does not echo within it is closed (default 15 s). */
  readonly heartbeatMs?: number;
  /** How often subscribed books are checked for a new version and pushed (default 250 ms). */
  readonly pushMs?: number;
  /** Real ms between book versions (default 1 s, scaled). */
  readonly bookStepMs?: number;
  /** Probability a push is held back and sent after the next one (out of order). */
  readonly reorder?: number;
  /** Probability a push is sent twice. */
  readonly duplicate?: number;
  /** When set, REST and WS require it as `x-api-key` (or `?apiKey=`). */
  readonly apiKey?: string;
  readonly dice?: FaultDice;
  readonly now?: () => number;
}

export interface WalletSim {
  http(req: IncomingMessage, res: ServerResponse, path: string, url: URL): boolean;
  ws(ws: WebSocket, req: IncomingMessage, path: string): void;
  readonly universe: WalletUniverse;
  readonly stats: {
    rest: number;
    restBooks: number;
    connections: number;
    pushes: number;
    heartbeatsEchoed: number;
    closedForHeartbeat: number;
    subscribes: number;
  };
  /** Live-adjustable delivery settings (tests): read per connection / per push. */
  readonly settings: { heartbeatMs: number; reorder: number; duplicate: number; apiKey: string | null };
  /** Test hook: stop sending anything (books and heartbeats) on every open socket for `ms`. */
  stallAll(ms: number): void;
  close(): void;
}

const iso = (ms: number): string => new Date(ms).toISOString();

// (not imported from server.ts: this module is loaded by it, and a value cycle is fragile)
function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

export function createWalletSim(opts: WalletSimOptions = {}): WalletSim {
  const now = opts.now ?? Date.now;
  const seed = opts.seed ?? 1;
  const scale = opts.windowScale ?? 1;
  const universe = new WalletUniverse({
    seed,
    windowScale: scale,
    coins: opts.coins ?? ['btc', 'eth', 'bnb'],
    windows: opts.windows ?? ['5m', '15m'],
    bookStepMs: opts.bookStepMs ?? Math.max(100, 1000 * Math.min(1, scale * 10)),
    now,
  });
  const settings = {
    heartbeatMs: opts.heartbeatMs ?? 15_000,
    reorder: opts.reorder ?? 0.05,
    duplicate: opts.duplicate ?? 0.03,
    apiKey: opts.apiKey ?? null,
  };
  const pushMs = opts.pushMs ?? 250;
  const random = rng(hashSeed(seed, 'wallet-ws'));
  const stats = { rest: 0, restBooks: 0, connections: 0, pushes: 0, heartbeatsEchoed: 0, closedForHeartbeat: 0, subscribes: 0 };
  const sockets = new Set<{ stallUntil: number; ws: WebSocket }>();

  function topicJson(m: WalletSimMarket): Record<string, unknown> {
    const st = universe.status(m);
    const done = st === 'RESOLVED';
    return {
      marketTopicId: m.topicId,
      slug: m.slug,
      topicType: 'CRYPTO',
      marketVariant: 'CRYPTO_UP_DOWN',
      marketId: m.id,
      asset: m.coin.toUpperCase(),
      interval: m.window,
      startTime: iso(m.startMs),
      endTime: iso(m.endMs),
      status: st,
      startPrice: now() >= m.startMs ? m.startPrice : null,
      endPrice: done ? m.endPrice : null,
      createdAt: iso(m.startMs - 2 * (m.endMs - m.startMs)),
      updatedAt: iso(Math.min(now(), m.endMs)),
    };
  }

  function marketJson(m: WalletSimMarket): Record<string, unknown> {
    const st = universe.status(m);
    const s = universe.stats(m);
    const tie = m.endPrice === m.startPrice;
    const resolution =
      st !== 'RESOLVED'
        ? null
        : tie
          ? { status: 'PUSH', winningIndexSet: null, resolvedAt: iso(m.endMs + 1000) }
          : { status: 'RESOLVED', winningIndexSet: m.endPrice > m.startPrice ? 1 : 2, resolvedAt: iso(m.endMs + 1000) };
    return {
      id: m.id,
      conditionId: m.conditionId,
      title: `${m.coin.toUpperCase()} Up or Down - ${m.window}`,
      status: st,
      outcomes: [
        { name: 'Up', indexSet: 1, onChainId: m.tokens[0] },
        { name: 'Down', indexSet: 2, onChainId: m.tokens[1] },
      ],
      decimalPrecision: 2,
      isNegRisk: false,
      resolution,
      volumeUsd: s.volume,
      liquidityUsd: s.liquidity,
      participants: s.participants,
      chainId: 56,
      exchangeContract: EXCHANGE_CONTRACT,
      collateral: 'USDT',
      createdAt: iso(m.startMs - 2 * (m.endMs - m.startMs)),
      updatedAt: iso(Math.min(now(), m.endMs)),
    };
  }

  function metricsJson(m: WalletSimMarket): Record<string, unknown> {
    const b = universe.book(m);
    const up = Math.round(m.p * 1000) / 1000;
    const last = Math.round((m.p + (rng(hashSeed(seed, `${m.id}t${m.version >> 2}`))() - 0.5) * 0.02) * 100) / 100;
    const tradeTs = universe.versionTs(m) - (m.version & 3) * 10;
    return {
      marketId: m.id,
      timestampMs: b.updateTimestampMs,
      outcomes: [
        { indexSet: 1, name: 'Up', chance: up, price: b.asks[0]?.[0] ?? up, lastTradePrice: last, lastTradeTimestampMs: tradeTs },
        {
          indexSet: 2,
          name: 'Down',
          chance: Math.round((1 - up) * 1000) / 1000,
          price: b.bids[0] ? Math.round((1 - b.bids[0][0]) * 100) / 100 : 1 - up,
          lastTradePrice: Math.round((1 - last) * 100) / 100,
          lastTradeTimestampMs: tradeTs,
        },
      ],
    };
  }

  function authorized(req: IncomingMessage, url: URL): boolean {
    const key = settings.apiKey;
    return !key || req.headers['x-api-key'] === key || url.searchParams.get('apiKey') === key;
  }

  function listing(items: Record<string, unknown>[], url: URL, res: ServerResponse): void {
    const status = url.searchParams.get('status');
    const lim = Number(url.searchParams.get('limit') ?? 50);
    if (!Number.isInteger(lim) || lim < 1 || lim > 200)
      return sendJson(res, 400, { success: false, error: { code: 'INVALID_PARAMS', message: 'limit must be 1..200' } });
    const c = url.searchParams.get('cursor');
    const off = c ? Number(Buffer.from(c, 'base64url').toString('utf8').replace(/^o/, '')) : 0;
    if (!Number.isInteger(off) || off < 0)
      return sendJson(res, 400, { success: false, error: { code: 'INVALID_PARAMS', message: 'bad cursor' } });
    const all = status ? items.filter((x) => x.status === status.toUpperCase()) : items;
    const more = off + lim < all.length;
    sendJson(res, 200, {
      success: true,
      data: all.slice(off, off + lim),
      cursor: more ? Buffer.from(`o${off + lim}`).toString('base64url') : null,
    });
  }

  function http(req: IncomingMessage, res: ServerResponse, path: string, url: URL): boolean {
    stats.rest++;
    if (!authorized(req, url)) {
      sendJson(res, 401, { success: false, error: { code: 'UNAUTHORIZED', message: 'missing or invalid api key' } });
      return true;
    }
    const dice = opts.dice;
    if (dice?.roll('drop')) {
      req.socket.destroy();
      return true;
    }
    const reply = (body: unknown): void => {
      if (dice?.roll('garbage')) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(dice.garble(JSON.stringify(body)));
      } else sendJson(res, 200, body);
    };
    let m: RegExpExecArray | null;
    if (path === '/v1/topics') return (listing(universe.list().map(topicJson), url, res), true);
    if (path === '/v1/markets') return (listing(universe.list().map(marketJson), url, res), true);
    if ((m = /^\/v1\/markets\/(\d+)(\/orderbook|\/stats)?$/.exec(path))) {
      const mk = universe.byId(m[1]);
      if (!mk) return (sendJson(res, 404, { success: false, error: { code: 'NOT_FOUND', message: 'market not found' } }), true);
      if (m[2] === '/orderbook') {
        stats.restBooks++;
        reply({ success: true, data: universe.book(mk) });
      } else if (m[2] === '/stats') reply({ success: true, data: metricsJson(mk) });
      else reply({ success: true, data: marketJson(mk) });
      return true;
    }
    return false;
  }

  function ws(sock: WebSocket, req: IncomingMessage): void {
    const url = new URL(req.url ?? '/', 'http://sim');
    if (!authorized(req, url)) return void sock.close(4001, 'unauthorized');
    stats.connections++;
    const state = { stallUntil: 0, ws: sock };
    sockets.add(state);
    const subs = new Map<number, number>(); // market id → last pushed version
    const held = new Map<number, string>(); // market id → a push held back, sent after that market's next
    let awaiting: number | null = null;
    const dice = opts.dice;
    const stalled = (): boolean => now() < state.stallUntil;
    const send = (text: string): void => {
      if (sock.readyState === sock.OPEN) sock.send(text);
    };
    const push = (id: number, text: string): void => {
      if (dice?.roll('drop')) return void sock.terminate();
      if (dice?.roll('stall')) state.stallUntil = now() + dice.faults.stallMs;
      if (stalled() || dice?.roll('gap')) return;
      if (dice?.roll('garbage')) return send(dice.garble(text));
      if (dice?.roll('unknown')) send(JSON.stringify({ type: 'M', topic: 'predictTrades/0', data: { note: 'unknown topic' } }));
      stats.pushes++;
      const late = held.get(id);
      if (late === undefined && random() < settings.reorder) {
        held.set(id, text); // delivered after this market's next push: an older version arrives late
        return;
      }
      send(text);
      if (late !== undefined) {
        send(late);
        held.delete(id);
      }
      if (random() < settings.duplicate || dice?.roll('dup')) send(text);
    };
    const hbMs = settings.heartbeatMs;
    const bookFrame = (mk: WalletSimMarket): string =>
      JSON.stringify({ type: 'M', topic: `predictOrderbook/${mk.id}`, data: universe.book(mk) });
    // Each heartbeat must be echoed before the next one is due (one period), or the socket is closed.
    const hb = setInterval(() => {
      if (awaiting !== null) {
        stats.closedForHeartbeat++;
        return void sock.close(4000, 'heartbeat timeout');
      }
      if (stalled()) return;
      awaiting = now();
      send(JSON.stringify({ type: 'M', topic: 'heartbeat', data: awaiting }));
    }, hbMs);
    const pusher = setInterval(() => {
      for (const [id, lastV] of subs) {
        const mk = universe.byId(String(id));
        if (!mk || universe.status(mk) !== 'OPEN') continue;
        universe.advance(mk);
        if (mk.version > lastV) {
          subs.set(id, mk.version);
          push(id, bookFrame(mk));
        }
      }
    }, pushMs);
    const drop =
      dice && dice.faults.dropEveryMs > 0 ? setTimeout(() => sock.terminate(), dice.faults.dropEveryMs * (0.5 + random())) : null;
    sock.on('message', (raw) => {
      let msg: { method?: unknown; requestId?: unknown; params?: unknown; data?: unknown };
      try {
        msg = JSON.parse((raw as Buffer).toString()) as typeof msg; // ws's default binaryType delivers one Buffer
      } catch {
        return send(
          JSON.stringify({ type: 'R', requestId: null, success: false, error: { code: 'INVALID_JSON', message: 'cannot parse request' } }),
        );
      }
      const rid = msg.requestId ?? null;
      const fail = (code: string, message: string): void =>
        send(JSON.stringify({ type: 'R', requestId: rid, success: false, data: null, error: { code, message } }));
      if (msg.method === 'heartbeat') {
        if (msg.data === awaiting) {
          awaiting = null;
          stats.heartbeatsEchoed++;
        }
        return;
      }
      if (msg.method !== 'subscribe' && msg.method !== 'unsubscribe') return fail('INVALID_METHOD', `unknown method ${String(msg.method)}`);
      const topics = Array.isArray(msg.params) ? msg.params : [];
      const ids: number[] = [];
      for (const t of topics) {
        const m = typeof t === 'string' ? /^predictOrderbook\/(\d+)$/.exec(t) : null;
        const mk = m ? universe.byId(m[1]) : undefined;
        if (!mk) return fail('INVALID_TOPIC', `unknown topic ${String(t)}`);
        ids.push(mk.id);
      }
      send(JSON.stringify({ type: 'R', requestId: rid, success: true, data: null }));
      for (const id of ids) {
        if (msg.method === 'unsubscribe') subs.delete(id);
        else {
          stats.subscribes++;
          subs.set(id, 0); // the next pusher tick sends the current snapshot
        }
      }
    });
    sock.on('close', () => {
      clearInterval(hb);
      clearInterval(pusher);
      if (drop) clearTimeout(drop);
      sockets.delete(state);
    });
    sock.on('error', () => undefined);
  }

  return {
    http,
    ws,
    universe,
    stats,
    settings,
    stallAll(ms) {
      for (const s of sockets) s.stallUntil = now() + ms;
    },
    close() {
      for (const s of sockets) s.ws.terminate();
      sockets.clear();
    },
  };
}

/** The `/wallet` mount of `pmtape sim`: REST below `/wallet`, the WebSocket at `/wallet/ws`. */
export function walletMounts(ctx: SimContext): SimMount[] {
  const s = Math.min(1, ctx.windowScale * 5);
  const sim = createWalletSim({
    seed: ctx.seed,
    windowScale: ctx.windowScale,
    coins: ctx.opts.coins,
    windows: ctx.opts.windows,
    heartbeatMs: Math.round(Math.min(15_000, Math.max(200, 15_000 * s))),
    dice: ctx.dice('wallet'),
    now: ctx.now,
  });
  const mount: SimMount & { readonly wallet: WalletSim } = {
    prefix: '/wallet',
    wallet: sim,
    http: (req, res, path, url) => sim.http(req, res, path, url),
    ws: (w, req, path) => (path === '/ws' ? sim.ws(w, req, path) : w.close(4004, 'no such endpoint')),
    config: (baseUrl) => ({
      upstreams: { wallet: { rest: `${baseUrl}/wallet`, ws: `${baseUrl.replace(/^http/, 'ws')}/wallet/ws`, rate_per_s: 20 } },
    }),
    close: () => sim.close(),
  };
  return [mount];
}
