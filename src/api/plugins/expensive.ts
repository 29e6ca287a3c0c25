// Requests that may cost far more than one small page (routes declaring `config: { expensive: true }`:
// coverage, replay, dataset rows) are limited per key in how many may run at once (config
// `server.max_expensive_per_key`, env PMTAPE_MAX_EXPENSIVE_PER_KEY, default 2). The rate limit
// counts requests; this counts what runs, so twenty parallel requests from one free key cannot
// hold the machine's cores. One more answers at once with 429 `rate_limited` and `Retry-After: 1`
// (docs/api.md, "Expensive requests"); the client retries when one of its requests has finished.
// A request counts from its key check until its answer is finished or its connection closed
// (a streamed replay counts for as long as it streams).

import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { PmtapeError } from '../../errors.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Limited per key in how many run at once (plugins/expensive.ts). */
    expensive?: boolean;
  }
}

const asArray = <T>(h: T | T[] | undefined): T[] => (h === undefined ? [] : Array.isArray(h) ? h : [h]);

/** Expensive requests running now, per key id. */
export class KeyConcurrency {
  private readonly running = new Map<string, number>();

  constructor(readonly max: number) {}

  /** Counts one more for `key`; false (nothing counted) when it already has `max` running. */
  enter(key: string): boolean {
    const n = this.running.get(key) ?? 0;
    if (n >= this.max) return false;
    this.running.set(key, n + 1);
    return true;
  }

  leave(key: string): void {
    const n = (this.running.get(key) ?? 1) - 1;
    if (n <= 0) this.running.delete(key);
    else this.running.set(key, n);
  }

  /** Running now for `key` (tests). */
  of(key: string): number {
    return this.running.get(key) ?? 0;
  }
}

async function expensivePlugin(app: FastifyInstance, opts: { maxPerKey: number }): Promise<void> {
  const limit = new KeyConcurrency(opts.maxPerKey);
  app.addHook('onRoute', (route) => {
    if (route.config?.expensive !== true) return;
    const hook = (req: FastifyRequest, reply: FastifyReply, done: (err?: Error) => void): void => {
      const key = req.apiKey?.id;
      if (key === undefined) return done(); // open routes: nothing to count by
      if (!limit.enter(key)) {
        void reply.header('retry-after', '1');
        return done(
          new PmtapeError(
            'rate_limited',
            `This key already has ${limit.max} expensive requests (coverage, replay, dataset rows) running; retry when one has finished (Retry-After: 1).`,
          ),
        );
      }
      let left = false;
      const leave = (): void => {
        if (left) return;
        left = true;
        limit.leave(key);
      };
      reply.raw.once('finish', leave);
      reply.raw.once('close', leave);
      done();
    };
    // Before the route's own pre-handlers, after the key check (onRequest) and the rate limit.
    route.preHandler = [hook, ...asArray(route.preHandler)];
  });
}

export default fp(expensivePlugin, { name: 'pmtape-expensive' });
