// Names to markets, with the contract's 404s, for every route that takes them: the book routes (one
// market from the path) and the replay (a list of ids, or a coin). One place, so an unknown coin,
// market or ticker is told the same thing wherever it is asked for.

import type { FastifyInstance } from 'fastify';
import { notFound } from '../../errors.js';
import type { FamilyDescriptor } from '../../families/descriptor.js';
import type { Market } from '../../schema/market.js';

/** A market a request names: its log id and its catalogue entry (null: books only, no entry yet). */
export interface ResolvedMarket {
  readonly id: string;
  readonly market: Market | null;
}

/** 404 unless `value` is a known value of the family's scope (coin: a configured or catalogued coin). */
export async function checkScope(app: FastifyInstance, d: FamilyDescriptor, value: string): Promise<void> {
  await d.routes.scope?.check(app, value);
}

/**
 * One id (market id, alias or ticker) of family `d`. A yes/no ticker with books but no catalogue
 * entry yet is served by id. `scope` (coin) is the path's, when the request has one: a market of
 * another scope is a 404, and the unknown-id message points at that scope's list.
 */
export async function resolveMarketId(app: FastifyInstance, d: FamilyDescriptor, id: string, scope?: string): Promise<ResolvedMarket> {
  const r = d.routes;
  const hit = await app.pmtape.markets.resolve(d.family, id);
  if (hit) {
    const wrong = r.scope && scope !== undefined ? r.scope.mismatch(hit.market, scope, id) : null;
    if (wrong !== null) throw notFound(wrong);
    return { id: hit.market.market_id, market: hit.market };
  }
  if (d.booksWithoutCatalog && (await app.pmtape.markets.hasBooks(d.family, id))) return { id, market: null };
  // Without a scope in the request, the list is named by its path template (`/v3/{coin}/markets`).
  throw notFound(r.unknownMessage(id, r.listUrl(scope ?? (r.scope ? `{${r.scope.param}}` : undefined))));
}

/** The market a route's path names: its scope checked first (unknown coin), then its id. */
export async function resolvePathMarket(
  app: FastifyInstance,
  d: FamilyDescriptor,
  params: Record<string, string>,
): Promise<ResolvedMarket> {
  const r = d.routes;
  const scope = r.scope ? params[r.scope.param] : undefined;
  if (scope !== undefined) await checkScope(app, d, scope);
  return resolveMarketId(app, d, params[r.idParam], scope);
}
