// Emulated `clob` market WebSocket and book REST (shared/venues/clob.md), with the WS faults:
// drops (rate or period), silent stalls, skipped, duplicated, truncated/garbage and unknown-type
// messages. Events come from the MarketModel (generated) or a Replayer (captured file).

import type { IncomingMessage, ServerResponse } from 'node:http';
import WebSocket from 'ws';
import type { FaultDice } from './faults.js';
import type { MarketModel } from './market-model.js';
import { sendJson, type SimContext, type SimMount } from './mount.js';

/** One subscriber connection and its fault state. */
export class ClobConn {
  readonly subs = new Set<string>();
  private stalledUntil = 0;
  private dropTimer: NodeJS.Timeout | null = null;
  sent = 0;

  constructor(
    readonly ws: WebSocket,
    private readonly dice: FaultDice,
    random: () => number,
  ) {
    const every = dice.faults.dropEveryMs;
    if (every > 0) {
      this.dropTimer = setTimeout(() => this.drop(), Math.round(every * (0.75 + 0.5 * random())));
      this.dropTimer.unref();
    }
    ws.on('close', () => this.dispose());
  }

  get stalled(): boolean {
    return Date.now() < this.stalledUntil;
  }

  dispose(): void {
    if (this.dropTimer) clearTimeout(this.dropTimer);
  }

  drop(): void {
    this.dispose();
    this.ws.terminate();
  }

  /** Sends one frame through the fault dice. */
  send(text: string): void {
    if (this.ws.readyState !== WebSocket.OPEN) return;
    if (this.stalled) return;
    const d = this.dice;
    if (d.roll('stall')) {
      this.stalledUntil = Date.now() + d.faults.stallMs;
      return;
    }
    if (d.roll('drop')) return this.drop();
    if (d.roll('gap')) return;
    if (d.roll('garbage')) {
      this.ws.send(d.garble(text));
      return;
    }
    this.ws.send(text);
    this.sent++;
    if (d.roll('dup')) this.ws.send(text);
    if (d.roll('unknown'))
      this.ws.send(
        JSON.stringify({
          event_type: 'mystery_update',
          market: '0x00',
          timestamp: String(Date.now()),
          note: 'emulated unknown event type',
        }),
      );
  }
}

/** The source of events a clob mount serves. */
export interface ClobSource {
  /** Full `book` events of these tokens now (the initial dump on subscribe). */
  books(tokens: readonly string[]): Record<string, unknown>[];
  /** REST `/book` body of one token, or null when unknown. */
  restBook(token: string): Record<string, unknown> | null;
  /** Starts emitting; `emit(tokens, event)` fans out to subscribers of those tokens. */
  start(emit: (tokens: readonly string[], event: Record<string, unknown>) => void, hasSubscribers: (t: string) => boolean): void;
  stop(): void;
}

/** Generated events from the market model at `rate` book changes per second. */
export function modelSource(model: MarketModel, rate: number, random: () => number): ClobSource {
  let timer: NodeJS.Timeout | null = null;
  return {
    books(tokens) {
      const now = Date.now();
      model.refresh(now);
      const out: Record<string, unknown>[] = [];
      for (const t of tokens) {
        const m = model.byToken(t);
        if (m && m.listMs <= now) out.push(model.bookEvent(m, m.tokens[0] === t ? 0 : 1, now));
      }
      return out;
    },
    restBook(token) {
      const m = model.byToken(token);
      if (!m) return null;
      const b = model.bookEvent(m, m.tokens[0] === token ? 0 : 1, Date.now());
      delete b.event_type;
      return { ...b, min_order_size: '5', neg_risk: false };
    },
    start(emit, hasSubscribers) {
      let last = Date.now();
      let carry = 0;
      timer = setInterval(() => {
        const now = Date.now();
        model.refresh(now);
        carry += (rate * (now - last)) / 1000;
        last = now;
        const live = model.live(now).filter((m) => hasSubscribers(m.tokens[0]) || hasSubscribers(m.tokens[1]));
        let n = Math.floor(carry);
        carry -= n;
        if (live.length === 0) return;
        while (n-- > 0) model.step(live[Math.floor(random() * live.length)], now, emit);
      }, 20);
    },
    stop() {
      if (timer) clearInterval(timer);
    },
  };
}

export function clobMount(ctx: SimContext, source: ClobSource): SimMount {
  const conns = new Set<ClobConn>();
  const connRandom = ctx.random('clob-conn');
  let n = 0;
  const hasSubscribers = (t: string): boolean => {
    for (const c of conns) if (c.subs.has(t)) return true;
    return false;
  };
  source.start((tokens, event) => {
    let text: string | null = null;
    for (const c of conns) {
      if (!tokens.some((t) => c.subs.has(t))) continue;
      text ??= JSON.stringify(event);
      c.send(text);
    }
  }, hasSubscribers);

  const subscribe = (c: ClobConn, tokens: string[], dump: boolean): void => {
    const fresh = tokens.filter((t) => typeof t === 'string');
    for (const t of fresh) c.subs.add(t);
    if (!dump || fresh.length === 0) return;
    const books = source.books(fresh);
    // The initial dump is batched: arrays of up to 50 events per frame.
    for (let i = 0; i < books.length; i += 50) c.send(JSON.stringify(books.slice(i, i + 50)));
  };

  return {
    prefix: '/clob',
    ws(ws, _req, path) {
      if (path !== '/ws/market' && path !== '/ws/market/') {
        ws.close(1008, 'unknown path');
        return;
      }
      const c = new ClobConn(ws, ctx.dice(`clob-ws-${n++}`), connRandom);
      conns.add(c);
      ws.on('close', () => conns.delete(c));
      ws.on('error', () => undefined);
      ws.on('message', (data) => {
        const text = (data as Buffer).toString(); // ws's default binaryType delivers one Buffer
        if (text === 'PING') {
          if (!c.stalled && ws.readyState === WebSocket.OPEN) ws.send('PONG');
          return;
        }
        let msg: { assets_ids?: unknown; operation?: unknown; type?: unknown; initial_dump?: unknown };
        try {
          msg = JSON.parse(text) as typeof msg;
        } catch {
          return;
        }
        const ids = Array.isArray(msg.assets_ids) ? (msg.assets_ids as string[]) : [];
        if (msg.operation === 'unsubscribe') for (const t of ids) c.subs.delete(t);
        else subscribe(c, ids, msg.initial_dump !== false);
      });
    },
    async http(req: IncomingMessage, res: ServerResponse, path: string, url: URL) {
      if (req.method === 'GET' && path === '/book') {
        const b = source.restBook(url.searchParams.get('token_id') ?? '');
        if (!b) sendJson(res, 404, { error: 'No orderbook exists for the requested token id' });
        else sendJson(res, 200, b);
        return true;
      }
      return false;
    },
    config: (base) => ({ upstreams: { clob: { ws: `${base.replace(/^http/, 'ws')}/clob/ws/market`, rest: `${base}/clob` } } }),
    close() {
      source.stop();
      for (const c of conns) c.drop();
    },
  };
}
