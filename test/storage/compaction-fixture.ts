// Writes realistic logs for compaction tests and the benchmark through the real writer: coin and
// wallet books (full books, deltas, checkpoints, trades, gaps), yes/no books in native text,
// metric samples and catalogue events, spread over one or more closed UTC days.

import { openWriter } from '../../src/storage/log/open-writer.js';
import type { Family, Observation, StreamName } from '../../src/schema/observation.js';
import { DAY_MS, dayStartMs } from '../../src/schema/time.js';

/** A tiny deterministic PRNG so fixtures are the same on every run. */
export function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const p2 = (x: number): string => x.toFixed(2);
/** Price tick of the coin/wallet books: 0.01 (two decimals), or 0.001 for deep books. */
let tick = 0.01;
const px = (x: number): string => (tick === 0.01 ? p2(x) : x.toFixed(3));

function ladder(r: () => number, best: number, dir: 1 | -1, levels: number): [string, string][] {
  const out: [string, string][] = [];
  for (let i = 0; i < levels; i++) out.push([px(best + dir * i * tick), String(Math.round(r() * 5000) / 10)]);
  return out.filter(([p]) => Number(p) > 0 && Number(p) < 1);
}

export interface FixtureOptions {
  readonly days: readonly string[];
  /** Book observations per coin/wallet market per day. */
  readonly booksPerDay: number;
  readonly coinMarkets?: number;
  readonly seed?: number;
  /** Levels a side of full books (default 12; checkpoints hold 5), at a 0.001 tick when above 40. */
  readonly levels?: number;
  /** How much of each day the records span, from 00:00:01 (default: the whole day). A short span
   * keeps tests that compact many times quick: `book_snapshots` holds a row per valid second. */
  readonly spanMs?: number;
  /** Coin markets record both outcome tokens' books (full books and checkpoints hold both, deltas
   * alternate), as a real recorder does; by default only the first outcome's, which keeps coin
   * `book_snapshots` empty (a coin second counts only when every outcome's book is valid). */
  readonly bothOutcomes?: boolean;
}

type Writer = Awaited<ReturnType<typeof openWriter>>;

/** Writes the fixture logs; returns the number of records written per (family/stream/market). */
export async function writeFixture(dataDir: string, o: FixtureOptions): Promise<Map<string, number>> {
  const r = rng(o.seed ?? 7);
  const levels = o.levels ?? 12;
  tick = levels > 40 ? 0.001 : 0.01;
  const counts = new Map<string, number>();
  const writers = new Map<string, Writer>();
  const w = async (family: Family, stream: StreamName, market: string, obs: Observation, checkpoint = false): Promise<void> => {
    const k = `${family}/${stream}/${market}`;
    let wr = writers.get(k);
    if (!wr) {
      wr = await openWriter(dataDir, { family, stream, market }, { fsyncIntervalMs: 5, fsyncMaxRecords: 100000 });
      writers.set(k, wr);
    }
    void wr.append(obs, { checkpoint });
    counts.set(k, (counts.get(k) ?? 0) + 1);
  };
  const coinMarkets = Array.from({ length: o.coinMarkets ?? 2 }, (_, i) => `5000${i}`);
  for (const day of o.days) {
    const t0 = dayStartMs(day)! + 1000;
    const step = Math.floor(Math.min(o.spanMs ?? DAY_MS, DAY_MS - 10_000) / o.booksPerDay);
    for (const [family, markets] of [['coin', coinMarkets], ['wallet-prediction', ['w-1']]] as const) {
      for (const m of markets) {
        const up = `${m}-up`;
        const down = `${m}-down`;
        if (day === o.days[0]) {
          await w(family, 'catalog', m, {
            type: 'catalog', recv_ts: t0, source_ts: null, event: 'listed', changed: ['status'],
            market: { family, market_id: m, status: 'open', outcomes: [{ label: 'Up', token_id: up }, { label: 'Down', token_id: down }] } as never,
          });
        }
        for (let i = 0; i < o.booksPerDay; i++) {
          const t = t0 + i * step + (i % 3) * 0.25;
          const src = i % 5 === 0 ? null : Math.floor(t) - 3;
          const mid = 0.3 + r() * 0.4;
          const both = o.bothOutcomes === true && family === 'coin';
          if (i === 0 || i % 50 === 0) {
            await w(family, 'books', m, { type: 'book', recv_ts: t, source_ts: src, token_id: up, units: 'decimal', bids: ladder(r, mid - tick, -1, levels), asks: ladder(r, mid + tick, 1, levels) });
            if (both) await w(family, 'books', m, { type: 'book', recv_ts: t, source_ts: src, token_id: down, units: 'decimal', bids: ladder(r, 1 - mid - tick, -1, levels), asks: ladder(r, 1 - mid + tick, 1, levels) });
          } else if (i % 37 === 0) {
            const depth = levels === 12 ? 5 : levels;
            const books = [{ token_id: up, bids: ladder(r, mid - tick, -1, depth), asks: ladder(r, mid + tick, 1, depth) }];
            if (both) books.push({ token_id: down, bids: ladder(r, 1 - mid - tick, -1, depth), asks: ladder(r, 1 - mid + tick, 1, depth) });
            await w(family, 'books', m, { type: 'book_checkpoint', recv_ts: t, source_ts: src, units: 'decimal', books }, true);
          } else if (i % 41 === 0) {
            await w(family, 'books', m, { type: 'trade', recv_ts: t, source_ts: src, token_id: up, price: px(mid), size: '12.5', side: 'buy' });
          } else if (i % 97 === 0) {
            await w(family, 'books', m, { type: 'gap', recv_ts: t, source_ts: null, reason: 'disconnected', start_ts: Math.floor(t) - 100, end_ts: i % 2 ? Math.floor(t) : null, detail: 'socket closed' });
          } else {
            const token = both && i % 2 === 1 ? down : up;
            const p = token === up ? mid : 1 - mid;
            await w(family, 'books', m, { type: 'book_delta', recv_ts: t, source_ts: src, token_id: token, changes: [{ side: r() < 0.5 ? 'bid' : 'ask', price: px(p), size: r() < 0.2 ? '0' : String(Math.round(r() * 900)) }] });
          }
          if (i % 10 === 0) {
            await w(family, 'metrics', m, { type: 'metric', recv_ts: t, source_ts: src, metric: 'chance', outcome: 'Up', token_id: up, value: mid });
          }
        }
      }
    }
    const deepTick = tick;
    tick = 0.01; // yes/no dollar prices: two significant decimals padded to four
    for (let i = 0; i < Math.max(2, Math.floor(o.booksPerDay / 4)); i++) {
      const t = t0 + i * step * 4;
      const yes = ladder(r, 0.5, -1, 8).map(([p, s]) => [`${p}00`, s.includes('.') ? s.padEnd(s.indexOf('.') + 3, '0') : `${s}.00`] as [string, string]);
      await w('yesno-exchange', 'books', 'KXBTC-26JUL-T1', { type: 'yesno_book', recv_ts: t, source_ts: null, units: 'dollars', yes, no: yes.slice(0, 4), poll_interval_ms: 1000 });
    }
    tick = deepTick;
  }
  for (const wr of writers.values()) await wr.close();
  return counts;
}
