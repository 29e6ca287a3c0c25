// Each route's per-request work, attached to the route at registration as one `onRequest` and one
// `onSend` hook: the request id header, the key check of routes that declare a plan (auth.ts), and
// the route's request tally (request-metrics.ts). One hook per stage instead of one per feature,
// callback style (no promise), and everything that can be resolved once per route (the plan, the
// tally) is resolved then, not per request. Open routes get no key check at all.
// The tally is taken at `onSend`, not `onResponse`: an `onResponse` hook makes Fastify add and
// remove two listeners on every response, on the hot path of every request. So the latency
// counted is the time to the first byte, which for a streamed answer (replay) is when it starts.
// Unmatched URLs reach no route: the not-found handler (error-handler.ts) sets their header and
// tallies them as `unknown`.

import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { checkHeader } from './auth.js';
import type { KeyStore } from './keys.js';
import { routeTally } from './request-metrics.js';
import type { RequestLog } from './request-log.js';

type Done = (err?: Error) => void;

declare module 'fastify' {
  interface FastifyRequest {
    /** `performance.now()` when the route's first hook ran (the request tally's clock). */
    startedAt: number;
  }
}

const asArray = <T>(h: T | T[] | undefined): T[] => (h === undefined ? [] : Array.isArray(h) ? h : [h]);

async function routeHooks(app: FastifyInstance, opts: { keys: KeyStore; requestLog: RequestLog | null }): Promise<void> {
  app.decorateRequest('apiKey', null);
  app.decorateRequest('startedAt', 0);
  app.addHook('onRoute', (route) => {
    const need = route.config?.plan;
    const keys = opts.keys;
    const onRequest = need
      ? (req: FastifyRequest, reply: FastifyReply, done: Done): void => {
          req.startedAt = performance.now();
          void reply.header('x-request-id', req.id);
          try {
            req.apiKey = checkHeader(keys, req.headers.authorization, need);
          } catch (e) {
            done(e as Error);
            return;
          }
          done();
        }
      : (req: FastifyRequest, reply: FastifyReply, done: Done): void => {
          req.startedAt = performance.now();
          void reply.header('x-request-id', req.id);
          done();
        };
    const tally = routeTally(route.url);
    const reqLog = opts.requestLog;
    // The request log's line is written here too (one line per request: plugins/request-log.ts).
    const onSend = reqLog
      ? (req: FastifyRequest, reply: FastifyReply, payload: unknown, done: (err: Error | null, payload: unknown) => void): void => {
          const ms = performance.now() - req.startedAt;
          tally.record(reply.statusCode, ms);
          reqLog(req, reply, ms);
          done(null, payload);
        }
      : (req: FastifyRequest, reply: FastifyReply, payload: unknown, done: (err: Error | null, payload: unknown) => void): void => {
          tally.record(reply.statusCode, performance.now() - req.startedAt);
          done(null, payload);
        };
    // First among the route's own onRequest hooks (anything added later sees `apiKey`), last on send.
    route.onRequest = [onRequest, ...asArray(route.onRequest)];
    route.onSend = [...asArray(route.onSend), onSend];
  });
}

export default fp(routeHooks, { name: 'pmtape-route-hooks' });
