// Fixtures of the replay tests: the read side's seeded data plus a second coin market whose records
// interleave with the first (with shared receive times, so ties between markets occur), a real
// server on an ephemeral port, and an NDJSON reader over plain HTTP.

import http from 'node:http';
import type { FastifyInstance } from 'fastify';
import { bookRecords, catalog, coinMarket, keysFor, seedAll, testApp, testConfig, writeLog, T0, type Tap } from './helpers.js';
import type { CoinMarket } from '../../src/schema/market.js';

/** A second btc market: ids sort before the first one's (540817), records every 300 ms. */
export const coinMarket2: CoinMarket = {
  ...coinMarket,
  market_id: '540001',
  condition_id: '0xc0ffee02',
  slug: 'btc-updown-15m-second',
  event_id: '88002',
  outcomes: [
    { label: 'Up', token_id: '3333' },
    { label: 'Down', token_id: '4444' },
  ],
};

/** seedAll plus the second coin market (books from T0 every 300 ms, a checkpoint every 40 deltas). */
export async function seedReplay(dataDir: string): Promise<void> {
  await seedAll(dataDir);
  await writeLog(dataDir, 'coin', 'catalog', coinMarket2.market_id, [catalog(coinMarket2, T0 - 500)]);
  await writeLog(
    dataDir,
    'coin',
    'books',
    coinMarket2.market_id,
    bookRecords(['3333', '4444'], { start: T0, n: 350, stepMs: 300, cpEvery: 40, seed: 11, trades: true }),
  );
}

export interface ReplayServer {
  readonly app: FastifyInstance;
  readonly base: string;
  readonly keys: { free: string; paid: string };
}

export async function startReplayServer(t: Tap, dataDir: string): Promise<ReplayServer> {
  const keys = await keysFor(dataDir);
  const app = await testApp(t, testConfig(dataDir));
  await app.listen({ port: 0, host: '127.0.0.1' });
  const port = (app.server.address() as { port: number }).port;
  return { app, base: `http://127.0.0.1:${port}`, keys };
}

export interface Answer {
  readonly status: number;
  readonly type: string;
  readonly text: string;
  /** Parsed lines (NDJSON), or the parsed body for a JSON error. */
  readonly lines: Record<string, any>[];
}

export async function get(base: string, path: string, key: string): Promise<Answer> {
  const res = await fetch(base + path, { headers: { authorization: `Bearer ${key}` } });
  const text = await res.text();
  const type = res.headers.get('content-type') ?? '';
  const lines = type.includes('ndjson')
    ? text
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => JSON.parse(l))
    : [JSON.parse(text)];
  return { status: res.status, type, text, lines };
}

/**
 * Reads a replay over a raw socket until at least `bytes` arrived, then destroys the connection
 * (a client that drops mid-stream). Returns the complete lines it had received.
 */
export function readPartly(base: string, path: string, key: string, bytes: number): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const req = http.get(base + path, { headers: { authorization: `Bearer ${key}` } }, (res) => {
      let got = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => {
        got += c;
        if (got.length >= bytes) {
          req.destroy();
          const lines = got.split('\n');
          lines.pop(); // the last piece may be a partial line
          resolve(lines);
        }
      });
      res.on('end', () => reject(new Error(`stream ended after ${got.length} bytes, before ${bytes}`)));
    });
    req.on('error', (e) => ((e as NodeJS.ErrnoException).code === 'ECONNRESET' ? undefined : reject(e)));
  });
}

/** The resume token of a line, built the way any client can: base64url([receive_time_ms, market, seq, type]). */
export function tokenOf(line: Record<string, any>): string {
  const market = line.market_id ?? line.ticker;
  return Buffer.from(JSON.stringify([Date.parse(line.receive_time), market, line.seq, line.type])).toString('base64url');
}

export const iso = (ms: number): string => new Date(ms).toISOString();
export { T0 };
