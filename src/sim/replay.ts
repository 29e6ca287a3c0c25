// `pmtape sim --replay FILE`: serves a captured `clob` message file over the market WebSocket at
// the recorded pace (or `speed` times faster; 0 = as fast as possible), starting when the first
// client subscribes to one of its tokens. The catalogue lists one open up/down market per captured
// condition id (tokens in order of first appearance: Up, Down) so a recorder tracks it as usual.

import { readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { parseCapture, sourceTimeOf } from '../recorders/capture.js';
import { normalizeClob } from '../recorders/clob/normalize.js';
import { MarketBooks } from '../book/book-state.js';
import type { ClobSource } from './clob.js';
import { sendJson, type SimMount } from './mount.js';

interface Entry {
  readonly at: number;
  readonly msg: unknown;
  readonly tokens: string[];
}

export interface ReplaySource extends ClobSource {
  coins(): string[];
  windows(): string[];
  readonly markets: ReadonlyMap<string, string[]>;
  /** Resolves once every message was sent. */
  readonly finished: Promise<void>;
}

function tokensOf(msg: unknown, cond: Map<string, string[]>): string[] {
  const out: string[] = [];
  const visit = (ev: unknown): void => {
    if (!ev || typeof ev !== 'object') return;
    const e = ev as { asset_id?: unknown; market?: unknown; price_changes?: unknown };
    const add = (t: unknown): void => {
      if (typeof t !== 'string') return;
      out.push(t);
      if (typeof e.market === 'string') {
        const l = cond.get(e.market) ?? [];
        if (!l.includes(t)) l.push(t);
        cond.set(e.market, l);
      }
    };
    add(e.asset_id);
    if (Array.isArray(e.price_changes)) for (const c of e.price_changes) add((c as { asset_id?: unknown })?.asset_id);
  };
  if (Array.isArray(msg)) msg.forEach(visit);
  else visit(msg);
  return [...new Set(out)];
}

export function replaySource(file: string, speed: number): ReplaySource {
  const { messages } = parseCapture(readFileSync(file, 'utf8'));
  const markets = new Map<string, string[]>();
  const entries: Entry[] = messages.map((m) => ({
    at: m.recv_ts ?? sourceTimeOf(m.msg) ?? 0,
    msg: m.msg,
    tokens: tokensOf(m.msg, markets),
  }));
  const books = new MarketBooks();
  const timers: NodeJS.Timeout[] = [];
  let started = false;
  let finish!: () => void;
  const finished = new Promise<void>((r) => (finish = r));
  const bookEvent = (t: string): Record<string, unknown> | null => {
    const v = books.view(t);
    if (!v) return null;
    const market = [...markets].find(([, ts]) => ts.includes(t))?.[0] ?? '';
    const lv = (l: readonly (readonly [string, string])[]): { price: string; size: string }[] =>
      [...l].reverse().map(([price, size]) => ({ price, size }));
    return { event_type: 'book', asset_id: t, market, bids: lv(v.bids), asks: lv(v.asks), timestamp: String(Date.now()), hash: 'replay' };
  };
  return {
    markets,
    finished,
    coins: () => ['btc'],
    windows: () => ['5m'],
    books: (tokens) => tokens.map(bookEvent).filter((b): b is Record<string, unknown> => b !== null),
    restBook: (t) => bookEvent(t),
    start(emit, hasSubscribers) {
      const poll = setInterval(() => {
        if (started || !entries.some((e) => e.tokens.some(hasSubscribers))) return;
        started = true;
        clearInterval(poll);
        const t0 = entries[0]?.at ?? 0;
        let i = 0;
        const sendNext = (): void => {
          if (i >= entries.length) return finish();
          const e = entries[i++];
          for (const o of normalizeClob(e.msg, Date.now())) books.apply(o);
          emit(e.tokens, e.msg as Record<string, unknown>);
          if (i >= entries.length) return finish();
          const wait = speed > 0 ? Math.max(0, (entries[i].at - e.at) / speed) : 0;
          timers.push(setTimeout(sendNext, wait));
        };
        timers.push(setTimeout(sendNext, speed > 0 ? Math.max(0, ((entries[0]?.at ?? t0) - t0) / speed) : 0));
      }, 20);
      timers.push(poll);
    },
    stop() {
      for (const t of timers) clearTimeout(t);
    },
  };
}

/** The catalogue of a replay: each captured condition as one open btc 5m up/down market. */
export function replayCatalogMount(src: ReplaySource): SimMount {
  const created = Date.now();
  const list = (): Record<string, unknown>[] =>
    [...src.markets]
      .filter(([, t]) => t.length === 2)
      .map(([cond, tokens], i) => {
        const startS = Math.floor(created / 1000) - 60;
        const slug = `btc-updown-5m-${startS + i}`;
        return {
          id: String(900000 + i),
          question: `Replayed capture of ${cond}`,
          conditionId: cond,
          slug,
          outcomes: JSON.stringify(['Up', 'Down']),
          outcomePrices: JSON.stringify(['0.5', '0.5']),
          clobTokenIds: JSON.stringify(tokens),
          startDate: new Date(created - 3_600_000).toISOString(),
          eventStartTime: new Date(startS * 1000).toISOString(),
          endDate: new Date(created + 86_400_000).toISOString(),
          createdAt: new Date(created - 3_600_000).toISOString(),
          updatedAt: new Date(created).toISOString(),
          active: true,
          closed: false,
          volume: '0',
          liquidity: '0',
          events: [
            {
              id: String(800000 + i),
              slug,
              startTime: new Date(startS * 1000).toISOString(),
              series: [{ slug: 'btc-up-or-down-5m', recurrence: '5m' }],
            },
          ],
        };
      });
  return {
    prefix: '/catalog',
    async http(req: IncomingMessage, res: ServerResponse, path: string) {
      if (req.method !== 'GET') return false;
      if (path === '/markets') sendJson(res, 200, list());
      else if (path === '/events')
        sendJson(
          res,
          200,
          list().map((m) => ({ ...(m.events as object[])[0], markets: [m] })),
        );
      else return false;
      return true;
    },
    config: (base) => ({ upstreams: { catalog: { rest: `${base}/catalog`, rate_per_s: 50 } } }),
  };
}
