// Bearer-key authentication and plans. Routes declare `config: { plan: 'free' | 'paid' }`; routes
// without it (health, metrics, docs) are open. `checkKey` is exported for the WebSocket stream,
// which authenticates its upgrade the same way (header or `?api_key=`).

import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { PmtapeError } from '../errors.js';
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

/** The bearer token of an `Authorization` header, or null when absent or not a bearer header. */
export function bearerOf(header: string | undefined): string | null {
  if (!header) return null;
  const m = /^Bearer[ ]+(\S+)\s*$/i.exec(header);
  return m ? m[1] : null;
}

/**
 * Verifies a presented key against the store and the plan a route needs. Throws `unauthorized`
 * (missing, malformed, unknown or revoked) or `plan_required`.
 */
export function checkKey(keys: KeyStore, presented: string | null, need: Plan): KeyRecord {
  if (presented === null) {
    throw new PmtapeError('unauthorized', 'An API key is required: send the header "Authorization: Bearer <key>" (create one with `pmtape keys create`).');
  }
  const rec = keys.verify(presented);
  if (!rec) throw new PmtapeError('unauthorized', 'The API key is malformed, unknown or revoked.');
  if (!planAllows(rec.plan, need)) {
    throw new PmtapeError('plan_required', `This route needs the ${need} plan; the key "${rec.name}" is on the ${rec.plan} plan.`);
  }
  return rec;
}

async function authPlugin(app: FastifyInstance, opts: { keys: KeyStore }): Promise<void> {
  app.decorateRequest('apiKey', null);
  app.addHook('onRequest', async (req: FastifyRequest) => {
    const need = req.routeOptions.config?.plan;
    if (!need) return;
    req.apiKey = checkKey(opts.keys, bearerOf(req.headers.authorization), need);
  });
}

export default fp(authPlugin, { name: 'pmtape-auth' });
