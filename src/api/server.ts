// Process entry of the read side: builds the app, listens, and closes it cleanly. `serve` runs it
// alone; `start` (and `demo`) run it beside the recorders. Port 0 picks a free port: the returned
// URL names the real one.

import { setFlagsFromString } from 'node:v8';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import type { Config } from '../config.js';
import { preloadParquet } from '../storage/index.js';
import { buildApp, type AppOptions } from './app.js';

export interface ApiServer {
  readonly app: FastifyInstance;
  /** `http://host:port` with the real port. */
  readonly url: string;
  /** Stops accepting, lets in-flight requests finish, closes streams and watchers. */
  close(): Promise<void>;
}

/**
 * No allocation-site pretenuring in a serving process. V8 moves an allocation site to the old
 * generation when most of its objects survive a young collection, which a burst of requests
 * waiting on disk (a cold start, a slow page) easily causes. Node's request objects then start in
 * the old generation, pointing at young ones (headers, buffers) that every scavenge must keep:
 * measured on `orderbook/latest`, 2.4 MB survived each scavenge, 8 – 10 µs of GC per request and
 * a third less throughput, in most server runs and for as long as the process lived. With the
 * flag: 26 KB per scavenge, under 1 µs per request. The flag is read at each collection, so
 * setting it at start is enough; nothing else in the process depends on it.
 */
export function tuneGcForServing(): void {
  setFlagsFromString('--no-allocation-site-pretenuring');
}

export async function startApi(config: Config, opts: Partial<AppOptions> & { logger?: false | FastifyBaseLogger } = {}): Promise<ApiServer> {
  tuneGcForServing();
  const app = await buildApp({ ...opts, config });
  const address = await app.listen({ host: config.host, port: config.port });
  // In the background: the first request for a compacted day should not wait for the module load.
  preloadParquet(config.dataDir).catch((e: unknown) => app.pmtape.log.warn({ err: e }, 'could not preload the Parquet reader'));
  let closing: Promise<void> | null = null;
  return {
    app,
    url: address,
    close: () => (closing ??= app.close()),
  };
}
