// Per-key rate limits by plan (config `rateLimits`, env PMTAPE_RATE_LIMITS; `off` disables), with
// @fastify/rate-limit: the counter key is the API key id, so limits follow keys, not addresses.
// Over the limit: 429 `rate_limited` with `Retry-After` (seconds), through the common error handler.
// It runs at `preHandler`: the key check is a per-route `onRequest` hook (see auth.ts), and a
// route's own hooks run after the global ones of the same stage, so an earlier stage would see no key.

import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import rateLimit from '@fastify/rate-limit';
import type { Config } from '../../config.js';
import { PmtapeError } from '../../errors.js';
import { isPart } from '../live/split.js';

async function rateLimitPlugin(app: FastifyInstance, opts: { limits: Config['rateLimits'] }): Promise<void> {
  const limits = opts.limits;
  if (!limits) return;
  await app.register(rateLimit, {
    global: true,
    hook: 'preHandler',
    // Open routes (health, metrics, docs) and unauthenticated requests are not counted, nor a
    // reader's request for its own side of a stitched answer (the client's request was counted).
    allowList: (req: FastifyRequest) => !req.apiKey || isPart(app, req),
    // The key is computed before the allow list is asked, so keyless requests reach these too.
    keyGenerator: (req: FastifyRequest) => req.apiKey?.id ?? '',
    // Synchronous: an async max/timeWindow costs two promises on every request.
    max: (req: FastifyRequest) => limits[req.apiKey?.plan ?? 'free'].max,
    timeWindow: (req: FastifyRequest) => limits[req.apiKey?.plan ?? 'free'].windowMs,
    cache: 100_000,
    errorResponseBuilder: (_req, ctx) =>
      Object.assign(
        new PmtapeError('rate_limited', `Rate limit of ${ctx.max} requests per window exceeded for this key; retry in ${ctx.after}.`),
        { statusCode: 429 },
      ),
  });
}

export default fp(rateLimitPlugin, { name: 'pmtape-rate-limit' });
