// Bearer-key authentication and plans. Routes declare `config: { plan: 'free' | 'paid' }`; routes
// without it (health, metrics, docs) are open. The check runs in each keyed route's `onRequest`
// hook (route-hooks.ts) and in the WebSocket stream's upgrade (header or `?api_key=`).

import { PmtapeError } from '../../errors.js';
import type { KeyRecord, KeyStore, Plan } from './keys.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The verified key of a `/v3` request (null on open routes). */
    apiKey: KeyRecord | null;
  }
  interface FastifyContextConfig {
    /** The plan a route needs; absent = no key needed. */
    plan?: Plan;
  }
}

/** Which plans include which routes: free = yes/no, coin, coverage; paid = everything. */
export function planAllows(keyPlan: Plan, routePlan: Plan): boolean {
  return keyPlan === 'paid' || routePlan === 'free';
}

const BEARER_RE = /^Bearer[ ]+(\S+)\s*$/i;

/** The bearer token of an `Authorization` header, or null when absent or not a bearer header. */
export function bearerOf(header: string | undefined): string | null {
  if (!header) return null;
  const m = BEARER_RE.exec(header);
  return m ? m[1] : null;
}

/**
 * Verifies a presented key against the store and the plan a route needs. Throws `unauthorized`
 * (missing, malformed, unknown or revoked) or `plan_required`.
 */
export function checkKey(keys: KeyStore, presented: string | null, need: Plan): KeyRecord {
  if (presented === null) {
    throw new PmtapeError(
      'unauthorized',
      'An API key is required: send the header "Authorization: Bearer <key>" (create one with `pmtape keys create`).',
    );
  }
  const rec = keys.verify(presented);
  if (!rec) throw new PmtapeError('unauthorized', 'The API key is malformed, unknown or revoked.');
  if (!planAllows(rec.plan, need)) {
    throw new PmtapeError('plan_required', `This route needs the ${need} plan; the key "${rec.name}" is on the ${rec.plan} plan.`);
  }
  return rec;
}

/**
 * `checkKey` of an `Authorization` header. A header that verified since the key file was last read
 * is looked up whole (no parsing); a revocation reloads the file and so forgets it.
 */
export function checkHeader(keys: KeyStore, header: string | undefined, need: Plan): KeyRecord {
  const known = header === undefined ? undefined : keys.knownHeader(header);
  if (known !== undefined && planAllows(known.plan, need)) return known;
  const rec = checkKey(keys, bearerOf(header), need);
  keys.rememberHeader(header!, rec); // checkKey throws when there is no header
  return rec;
}
