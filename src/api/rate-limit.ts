// Per-key rate limits by plan (config `rateLimits`, env PMTAPE_RATE_LIMITS; `off` disables): a fixed
// window per API key id, counted synchronously inside the auth hook (no promise, no route lookup per
// request), so limits follow keys, not addresses. Over the limit: 429 `rate_limited` with
// `Retry-After` (seconds), through the common error handler.

import type { FastifyReply } from 'fastify';
import type { Config } from '../config.js';
import { PmtapeError } from '../errors.js';
import type { KeyRecord } from './keys.js';

type Limits = NonNullable<Config['rateLimits']>;

interface Window {
  start: number;
  count: number;
}

export class RateLimiter {
  // One entry per verified key id: bounded by the key file, never by what clients send.
  private readonly windows = new Map<string, Window>();

  constructor(private readonly limits: Limits) {}

  /**
   * Counts one request of `key` and sets the `x-ratelimit-*` headers; past the plan's limit sets
   * `Retry-After` and throws `rate_limited` (status 429).
   */
  hit(key: KeyRecord, reply: FastifyReply, now = Date.now()): void {
    const { max, windowMs } = this.limits[key.plan];
    let w = this.windows.get(key.id);
    if (w === undefined) this.windows.set(key.id, (w = { start: now, count: 0 }));
    else if (now - w.start >= windowMs) {
      w.start = now;
      w.count = 0;
    }
    w.count++;
    const resetS = Math.max(1, Math.ceil((w.start + windowMs - now) / 1000));
    void reply.header('x-ratelimit-limit', max).header('x-ratelimit-remaining', Math.max(0, max - w.count)).header('x-ratelimit-reset', resetS);
    if (w.count <= max) return;
    void reply.header('retry-after', resetS);
    throw Object.assign(new PmtapeError('rate_limited', `Rate limit of ${max} requests per window exceeded for this key; retry in ${resetS} s.`), { statusCode: 429 });
  }
}
