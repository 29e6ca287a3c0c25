// Process entry of the read side: builds the app, listens, and closes it cleanly. `serve` runs it
// alone; `start` (and `demo`) run it beside the recorders. Port 0 picks a free port: the returned
// URL names the real one.

import type { FastifyInstance, FastifyServerOptions } from 'fastify';
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

export async function startApi(config: Config, opts: Partial<AppOptions> & { logger?: FastifyServerOptions['logger'] } = {}): Promise<ApiServer> {
  const app = await buildApp({ ...opts, config });
  const address = await app.listen({ host: config.host, port: config.port });
  // In the background: the first request for a compacted day should not wait for the module load.
  preloadParquet(config.dataDir).catch((e: unknown) => app.log.warn({ err: e }, 'could not preload the Parquet reader'));
  let closing: Promise<void> | null = null;
  return {
    app,
    url: address,
    close: () => (closing ??= app.close()),
  };
}
