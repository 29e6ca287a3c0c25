// Bearer-key authentication and plans. Routes declare `config: { plan: 'free' | 'paid' }`; routes
// without it (health, metrics, docs) are open. `checkKey` is exported for the WebSocket stream,
// which authenticates its upgrade the same way (header or `?api_key=`).

import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
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
    throw new PmtapeError('unauthorized', 'An API key is required: send the header "Authorization: Bearer <key>" (create one with `pmtape keys create`).');
  }
  const rec = keys.verify(presented);
  if (!rec) throw new PmtapeError('unauthorized', 'The API key is malformed, unknown or revoked.');
  if (!planAllows(rec.plan, need)) {
    throw new PmtapeError('plan_required', `This route needs the ${need} plan; the key "${rec.name}" is on the ${rec.plan} plan.`);
  }
  return rec;
}

/**
 * Adds the key check as an `onRequest` hook of each route that declares
 * a plan, at registration: open routes carry no hook at all, and a request never builds
 * `routeOptions` to find its plan. Callback style, so a request costs no promise here.
 */
async function authPlugin(app: FastifyInstance, opts: { keys: KeyStore }): Promise<void> {
  app.decorateRequest('apiKey', null);
  app.addHook('onRoute', (route) => {
    const need = route.config?.plan;
    if (!need) return;
    const hook = (req: FastifyRequest, _reply: FastifyReply, done: (err?: Error) => void): void => {
      try {
        const rec = checkKey(opts.keys, bearerOf(req.headers.authorization), need);
        req.apiKey = rec;
      } catch (e) {
        done(e as Error);
        return;
      }
      done();
    };
    // First among the route's own hooks: anything added later (by other plugins) sees `apiKey`.
    const own = route.onRequest;
    route.onRequest = own === undefined ? [hook] : [hook, ...(Array.isArray(own) ? own : [own])];
  });
}

export default fp(authPlugin, { name: 'pmtape-auth' });
