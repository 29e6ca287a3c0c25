// The API as a Fastify plugin plus `buildApp`, which makes an instance with the options the plugin
// relies on (strict query validation, request ids, logger). Plugins, in order: services, errors,
// route hooks (request id, key check, request tally), OpenAPI docs, rate limits, then the routes
// of every family (src/families/), coverage, the datasets (Parquet) and stream plugins, and the
// static page at `/`.

import { randomBytes } from 'node:crypto';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyReply, type FastifyServerOptions } from 'fastify';
import { pino } from 'pino';
import fp from 'fastify-plugin';
import type { Config } from '../config.js';
import { KeyStore } from './plugins/keys.js';
import { CursorCodec, loadCursorSecret } from './query/cursor.js';
import { MarketsIndex } from './query/markets-index.js';
import { CoverageCache } from './query/coverage.js';
import { StatusBoard } from './query/status.js';
import { LatestBooks } from './query/latest.js';
import { LatestBodies } from './query/latest-body.js';
import { LogChanges } from '../storage/index.js';
import type { Socket } from 'node:net';
import errorHandler, { clientErrorResponse, envelope } from './plugins/error-handler.js';
import { strictSchemaController } from './strict-params.js';
import routeHooks from './plugins/route-hooks.js';
import expensiveRequests from './plugins/expensive.js';
import rateLimits from './plugins/rate-limit.js';
import openapi from './plugins/openapi.js';
import healthRoutes from './routes/health.js';
import familyRoutes from './routes/family.js';
import { DESCRIPTORS } from '../families/registry.js';
import coverageRoutes from './routes/coverage.js';
import datasetsRoutes from './routes/datasets.js';
import replayRoutes from './replay/route.js';
import tardisRoutes from './tardis/routes.js';
import streamPlugin from './stream/route.js';
import liveForward, { type LiveForwardOptions } from './plugins/live-forward.js';
import pagePlugin from './plugins/page.js';
import { bufferedStdout, requestLog, type RequestLog } from './plugins/request-log.js';

/** Request ids: unique per process start (boot id) and cheap (a counter). */
const BOOT_ID = randomBytes(4).toString('hex');
let requestCount = 0;
const nextRequestId = (): string => `${BOOT_ID}-${(++requestCount).toString(36)}`;

/** Shared services of the read side, reachable from every plugin as `app.pmtape`. */
export interface Services {
  readonly config: Config;
  readonly keys: KeyStore;
  readonly cursors: CursorCodec;
  readonly markets: MarketsIndex;
  readonly status: StatusBoard;
  readonly latest: LatestBooks;
  /** Serialized latest-book bodies, reused until the newest record or `stale` changes. */
  readonly latestBodies: LatestBodies;
  /** First/last record per log for `/v3/coverage` (query/coverage.ts), filled at start by `serve`. */
  readonly coverage: CoverageCache;
  /** The process's logger (errors, warnings, the request log); Fastify's own `app.log` is silent. */
  readonly log: FastifyBaseLogger;
  /** One line per answered request (plugins/request-log.ts), or null when the level is above info. */
  readonly requestLog: RequestLog | null;
}

declare module 'fastify' {
  interface FastifyInstance {
    pmtape: Services;
  }
}

export interface AppOptions {
  readonly config: Config;
  /** How often the key file is checked for changes by the CLI (ms). */
  readonly keyPollMs?: number;
  /** Most bytes of latest-book state kept warm. */
  readonly latestCacheBytes?: number;
  /** The logger for the app's own lines (default: pino at the config's level on stdout). */
  readonly log?: FastifyBaseLogger;
  /** `serve --live-from`: forward what reaches past the archive (and the stream) to this server. */
  readonly liveFrom?: LiveForwardOptions;
}

async function app(fastify: FastifyInstance, opts: AppOptions): Promise<void> {
  const { config } = opts;
  const keys = new KeyStore(config.dataDir, opts.keyPollMs ?? 250);
  await keys.start();
  fastify.addHook('onClose', async () => keys.stop());
  const log = opts.log ?? fastify.log;
  const services: Services = {
    config,
    keys,
    cursors: new CursorCodec(await loadCursorSecret(config.dataDir)),
    markets: new MarketsIndex(config.dataDir),
    status: new StatusBoard(config.dataDir),
    latest: new LatestBooks({
      maxBytes: opts.latestCacheBytes,
      changes: new LogChanges(config.dataDir),
      recheckMs: config.latestRecheckMs,
    }),
    latestBodies: new LatestBodies(),
    coverage: new CoverageCache(config.dataDir, new LogChanges(config.dataDir)),
    log,
    requestLog: requestLog(log),
  };
  fastify.decorate('pmtape', services);
  fastify.addHook('onClose', async () => {
    services.latest.close();
    services.markets.close();
    services.coverage.close();
  });

  await fastify.register(errorHandler);
  // Before any route (docs too): the request id header, key check and request tally of each route.
  await fastify.register(routeHooks, { keys, requestLog: services.requestLog });
  await fastify.register(expensiveRequests, { maxPerKey: config.server.maxExpensivePerKey });
  await fastify.register(openapi); // the document at /docs/json and its UI (before any documented route)
  await fastify.register(rateLimits, { limits: config.rateLimits });
  // Before the routes, so its preHandler hook is theirs (after the key check and rate limits).
  if (opts.liveFrom) await fastify.register(liveForward, opts.liveFrom);

  await fastify.register(healthRoutes);
  // Every family from its descriptor, under each of its prefixes (an alias answers identically).
  for (const d of DESCRIPTORS) for (const prefix of d.routes.prefixes) await fastify.register(familyRoutes, { prefix, descriptor: d });
  await fastify.register(coverageRoutes, { prefix: '/v3' });
  await fastify.register(datasetsRoutes, { prefix: '/v3' });
  await fastify.register(replayRoutes, { prefix: '/v3' });
  await fastify.register(tardisRoutes); // /v1/<exchange>/<data_type>/...: Tardis's datasets API paths
  // A reader with --live-from relays the stream's upgrade to the live server instead of serving it.
  if (!opts.liveFrom) await fastify.register(streamPlugin, { prefix: '/v3' });
  await fastify.register(pagePlugin); // the page at `/` (static files from public/, no key)
}

export const apiPlugin = fp(app, { name: 'pmtape-api', fastify: '5.x' });

/** Fastify options the API depends on: strict validation (no silently dropped parameters), request ids. */
export function serverOptions(reqLog: RequestLog | null = null): FastifyServerOptions {
  return {
    // Unique per process start and cheap (a UUID per request showed in profiles): boot id + counter.
    genReqId: nextRequestId,
    requestIdHeader: false,
    routerOptions: { maxParamLength: 1024 },
    // Malformed URL encoding and over-long path segments are caught by the router before any
    // route exists: answer them with the same envelope (400 naming the path) instead of its JSON.
    frameworkErrors: (err, req, reply: FastifyReply) => {
      const msg =
        err.code === 'FST_ERR_MAX_PARAM_LENGTH'
          ? 'A path segment is longer than 1024 characters.'
          : 'The URL path is not valid percent-encoding.';
      reqLog?.(req, reply.code(400), 0);
      void reply
        .code(400)
        .header('x-request-id', req.id)
        .type('application/json; charset=utf-8')
        .send(envelope('invalid_parameter', msg, String(req.id)));
    },
    // Requests Node's parser refuses (a raw 0xFF in the URL, 16 KiB of headers) get the envelope too.
    clientErrorHandler(this: FastifyInstance, err: Error & { code?: string }, socket: Socket) {
      if (socket.destroyed) return;
      const id = nextRequestId();
      const text = clientErrorResponse(err, id);
      // Only the code: the error's rawPacket holds the request's bytes (its URL and Authorization).
      this.log.debug({ code: err.code, request_id: id }, 'request refused by the HTTP parser');
      if (text !== null && socket.writable) socket.write(text);
      socket.destroy();
    },
    // Coercion is needed (a query is text) but made strict for numbers (strict-params.ts).
    schemaController: strictSchemaController(),
    ajv: { customOptions: { removeAdditional: false, coerceTypes: true, useDefaults: true, allErrors: false } },
  };
}

/**
 * The logger of a serving process: pino JSON lines on stdout, beside the commands' own lines
 * (`ready <url>`, first key): one stream for journald or a container runtime to collect and
 * rotate; progress bars use stderr. Buffered (plugins/request-log.ts: a write per few kilobytes,
 * not per line). `false` (tests): silent.
 */
export function serverLogger(config: Config, logger?: false | FastifyBaseLogger): FastifyBaseLogger {
  if (logger === false) return pino({ level: 'silent' });
  return logger ?? pino({ level: config.logLevel }, bufferedStdout());
}

/**
 * A ready-to-listen instance of the whole API. Fastify itself has no logger at any level: no child
 * logger per request and no response listeners for its request-completed line, work on every
 * request that the app's own log does more cheaply. The request log (one line per request at level info or finer,
 * plugins/request-log.ts) and the app's own lines (errors, warnings) go to `app.pmtape.log`.
 */
export async function buildApp(opts: AppOptions & { readonly logger?: false | FastifyBaseLogger }): Promise<FastifyInstance> {
  const log = serverLogger(opts.config, opts.logger);
  const fastify = Fastify({ ...serverOptions(requestLog(log)), logger: false });
  await fastify.register(apiPlugin, { ...opts, log });
  await fastify.ready();
  return fastify;
}
