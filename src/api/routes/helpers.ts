// Small pieces every route plugin shares: cursor decode/encode bound to a logical route, market
// lookups with the contract's 404s, and listing of catalogue entries with stable cursors.

import type { FastifyInstance } from 'fastify';
import { notFound, PmtapeError } from '../../errors.js';
import type { Family } from '../../schema/observation.js';
import type { IndexedMarket } from '../query/markets-index.js';
import type { CursorPos } from '../query/cursor.js';
import type { ListParams, Query } from '../query/params.js';

/** The resume seq of a cursor for a snapshot-like route (asc: `after`, desc: `before`). */
export function resumeOf(app: FastifyInstance, route: string, query: Query, lp: ListParams): number | undefined {
  if (lp.cursor === undefined) return undefined;
  const pos = app.pmtape.cursors.decode(lp.cursor, route, query);
  const v = lp.order === 'desc' ? pos.before : pos.after;
  if (typeof v !== 'number' || !Number.isSafeInteger(v)) throw new PmtapeError('invalid_cursor', "Parameter 'cursor' does not belong to this route.");
  return v;
}

export function nextCursor(app: FastifyInstance, route: string, query: Query, pos: CursorPos | null): string | null {
  return pos === null ? null : app.pmtape.cursors.encode(route, query, pos);
}

/** The market a path id names, or 404 pointing at the family's market list. */
export async function marketOr404(app: FastifyInstance, family: Family, pathId: string, listUrl: string): Promise<IndexedMarket> {
  const m = await app.pmtape.markets.resolve(family, pathId);
  if (!m) throw notFound(`Unknown market '${pathId.slice(0, 200)}'; list known markets at ${listUrl}.`);
  return m;
}

/**
 * One page of catalogue entries in listing order (first capture, then id; `desc` reverses it). The
 * cursor holds the last entry's sort key, so markets listed later (always sorted after it) are
 * never skipped by an ascending walk.
 */
export function listPage<T>(
  app: FastifyInstance,
  route: string,
  query: Query,
  entries: readonly IndexedMarket[],
  keep: (m: IndexedMarket) => boolean,
  shape: (m: IndexedMarket) => T,
  lp: Pick<ListParams, 'limit' | 'cursor' | 'order'>,
): { data: T[]; next_cursor: string | null } {
  const desc = lp.order === 'desc';
  let from: { ts: number; id: string } | null = null;
  if (lp.cursor !== undefined) {
    const pos = app.pmtape.cursors.decode(lp.cursor, route, query);
    if (typeof pos.ts !== 'number' || typeof pos.id !== 'string') throw new PmtapeError('invalid_cursor', "Parameter 'cursor' does not belong to this route.");
    from = { ts: pos.ts, id: pos.id };
  }
  // Compare an entry with the cursor key: < 0 before it, 0 equal, > 0 after it (ascending order).
  const cmp = (e: IndexedMarket, k: { ts: number; id: string }): number =>
    e.first_ts !== k.ts ? e.first_ts - k.ts : e.market.market_id < k.id ? -1 : e.market.market_id > k.id ? 1 : 0;
  const data: T[] = [];
  let last: IndexedMarket | null = null;
  const n = entries.length;
  for (let i = 0; i < n; i++) {
    const e = entries[desc ? n - 1 - i : i];
    if (from && (desc ? cmp(e, from) >= 0 : cmp(e, from) <= 0)) continue;
    if (!keep(e)) continue;
    if (data.length === lp.limit) {
      return { data, next_cursor: app.pmtape.cursors.encode(route, query, { ts: last!.first_ts, id: last!.market.market_id }) };
    }
    data.push(shape(e));
    last = e;
  }
  return { data, next_cursor: null };
}

/** Does [a0, a1] (null = unbounded) overlap the query window [start, end)? */
export function overlaps(a0: number | null, a1: number | null, start: number | undefined, end: number | undefined): boolean {
  if (end !== undefined && a0 !== null && a0 >= end) return false;
  if (start !== undefined && a1 !== null && a1 < start) return false;
  return true;
}
