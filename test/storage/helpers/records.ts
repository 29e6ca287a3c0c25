// Deterministic records for storage tests: realistic book snapshots and small trades whose
// content is a function of their number, so a test can check every byte that comes back.

import type { BookSnapshot, Observation, Trade } from '../../../src/schema/observation.js';

/** A book with `levels` levels per side, priced like the clob kind (decimal text). */
export function book(recvTs: number, n: number, levels: number): BookSnapshot {
  const bids: [string, string][] = [];
  const asks: [string, string][] = [];
  for (let i = 0; i < levels; i++) {
    bids.push([(0.49 - i * 0.001).toFixed(3), String(100 + ((n * 7 + i * 13) % 5000))]);
    asks.push([(0.51 + i * 0.001).toFixed(3), String(100 + ((n * 11 + i * 17) % 5000))]);
  }
  return {
    type: 'book',
    recv_ts: recvTs,
    source_ts: recvTs - 3,
    token_id: `tok-${n % 2}`,
    units: 'decimal',
    bids,
    asks,
    hash: `h${n}`,
  };
}

export function trade(recvTs: number, n: number): Trade {
  return {
    type: 'trade',
    recv_ts: recvTs,
    source_ts: n % 3 === 0 ? null : recvTs - 1,
    token_id: 'tok',
    price: `0.${n % 100}`,
    size: String(n),
  };
}

/** Record number `n` of a mixed stream: mostly trades, every 7th a book of 1..100 levels. */
export function mixed(recvTs: number, n: number): Observation {
  return n % 7 === 0 ? book(recvTs, n, 1 + (n % 100)) : trade(recvTs, n);
}
