// Live stream (API.md §7): `GET /v3/stream` upgrades to a WebSocket (ws, noServer) after the same
// key check as REST (Bearer header or `?api_key=`); a refused upgrade gets the HTTP status and the
// JSON error envelope. Runs the ping sweep (dead peers dropped) and closes streams of revoked keys.

import { randomUUID } from 'node:crypto';
import { STATUS_CODES, type IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { WebSocketServer } from 'ws';
import type { StreamTuning } from '../../config.js';
import { PmtapeError } from '../../errors.js';
import { streamDisconnects } from '../../metrics.js';
import { FAMILIES, type Family } from '../../schema/observation.js';
import { familyOf } from '../../families/registry.js';
import { bearerOf, checkKey, planAllows } from '../plugins/auth.js';
import { envelope } from '../plugins/error-handler.js';
import { errorResponses } from '../response-schemas.js';
import { loadCursorSecret } from '../query/cursor.js';
import { StreamClient, type StreamLimits, type StreamServices } from './client.js';
import { StreamHub } from './hub.js';
import { streamModels, type ModelFactory, type StreamTarget } from './market.js';
import { cursorMarket, cursorStartSeq, type StreamRequest } from './protocol.js';

/** The stream's limits and timers: the config's `stream` (PMTAPE_STREAM_* over defaults), which
 *  the plugin's `settings` option overrides field by field (tests shrink timers that way). */
export type StreamSettings = StreamTuning & StreamLimits;

/** The stream state behind each HTTP server (tests and the benchmark look into it). */
export const streamOfServer = new WeakMap<object, { readonly hub: StreamHub; readonly clients: ReadonlySet<StreamClient> }>();

export interface StreamPluginOptions {
  readonly settings?: Partial<StreamSettings>;
  /** Snapshot rules per family; defaults to the REST shapes (tests may wrap it). */
  readonly modelFor?: ModelFactory;
}

/** The fields of `over` that are set, so an explicit `undefined` does not erase a configured value. */
function definedOnly<T extends object>(over: Partial<T> | undefined): Partial<T> {
  return Object.fromEntries(Object.entries(over ?? {}).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/** Which plan a family needs: as on REST (the family descriptor says). */
const familyPlan = (family: Family): 'free' | 'paid' => familyOf(family).plan;

/** Answers a refused upgrade with a status line and the JSON envelope, then closes the socket. */
function refuse(socket: Duplex, err: PmtapeError): void {
  const body = JSON.stringify({ error: { status: err.status, code: err.code, message: err.message, request_id: randomUUID() } });
  const extra = err.status === 401 ? 'WWW-Authenticate: Bearer\r\n' : '';
  socket.end(
    `HTTP/1.1 ${err.status} ${STATUS_CODES[err.status] ?? 'Error'}\r\nContent-Type: application/json; charset=utf-8\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\n${extra}Connection: close\r\n\r\n${body}`,
  );
}

export default async function streamPlugin(app: FastifyInstance, opts: StreamPluginOptions): Promise<void> {
  const { keys, markets, config } = app.pmtape;
  const settings: StreamSettings = { ...config.stream, ...definedOnly(opts.settings) };
  const path = `${app.prefix}/stream`;
  const secret = await loadCursorSecret(config.dataDir);
  const log = app.pmtape.log;
  const hub = new StreamHub(opts.modelFor ?? streamModels, (t) => markets.reader(t.family, 'books', t.logMarket), log);

  async function resolveTarget(req: StreamRequest): Promise<StreamTarget> {
    const d = familyOf(req.family);
    const hit = await markets.resolve(req.family, req.market);
    if (hit) {
      const m = hit.market;
      if (d.routes.scope && req.coin !== undefined && d.routes.scope.mismatch(m, req.coin, req.market) !== null) {
        throw new PmtapeError('not_found', `Market '${req.market}' is not a ${req.coin} market; list them at /v3/${req.coin}/markets.`);
      }
      if (req.outcome !== undefined && 'outcomes' in m && !m.outcomes.some((o) => o.label === req.outcome)) {
        throw new PmtapeError('invalid_parameter', `Field 'outcome' must be one of ${m.outcomes.map((o) => o.label).join(', ')}.`);
      }
      return { family: req.family, logMarket: m.market_id, idField: d.idField, id: m.market_id, market: m };
    }
    // A ticker may have books before its catalogue entry (yes/no): its snapshots need only the id.
    if (d.booksWithoutCatalog && (await markets.hasBooks(req.family, req.market))) {
      return { family: req.family, logMarket: req.market, idField: d.idField, id: req.market, market: null };
    }
    throw new PmtapeError('not_found', `Unknown ${d.routes.noun} '${req.market}'; list them at ${d.routes.listUrl(req.coin)}.`);
  }

  const svc: StreamServices = {
    hub,
    modelFor: opts.modelFor ?? streamModels,
    limits: settings,
    resolveTarget,
    cursorStart: async (t, _req, text) => cursorStartSeq(secret, text, cursorMarket(t.family, t.logMarket)),
    planCheck: (plan, family) => {
      const need = familyPlan(family);
      return planAllows(plan as 'free' | 'paid', need)
        ? null
        : new PmtapeError('plan_required', `The ${family} family needs the ${need} plan; this key is on the ${plan} plan.`);
    },
    log,
  };

  const wss = new WebSocketServer({ noServer: true, maxPayload: settings.maxPayloadBytes, perMessageDeflate: false });
  const clients = new Set<StreamClient>();

  const onUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer): void => {
    socket.on('error', () => socket.destroy());
    const url = new URL(req.url ?? '/', 'http://localhost');
    if (url.pathname !== path)
      return refuse(socket, new PmtapeError('not_found', `No WebSocket at ${url.pathname}; the stream is ${path}.`));
    for (const k of url.searchParams.keys()) {
      if (k !== 'api_key' && k !== 'family')
        return refuse(socket, new PmtapeError('invalid_parameter', `Parameter '${k}' is not known here (api_key, family).`));
    }
    // `?family=` (optional, comma-separated) declares the families the client will subscribe to,
    // so a plan that does not include one is refused on the upgrade with 403 as on REST.
    const families = url.searchParams.getAll('family').flatMap((f) => f.split(','));
    const unknown = families.find((f) => !FAMILIES.includes(f as Family));
    if (unknown !== undefined)
      return refuse(socket, new PmtapeError('invalid_parameter', `Parameter 'family' must be one of ${FAMILIES.join(', ')}.`));
    const presented = bearerOf(req.headers.authorization) ?? url.searchParams.get('api_key');
    let plan: string;
    try {
      plan = checkKey(keys, presented, families.some((f) => familyPlan(f as Family) === 'paid') ? 'paid' : 'free').plan;
    } catch (err) {
      return refuse(socket, err instanceof PmtapeError ? err : new PmtapeError('internal', 'Internal error.'));
    }
    wss.handleUpgrade(req, socket, head, (ws) => {
      const client = new StreamClient(ws, presented!, plan, svc);
      clients.add(client);
      ws.on('close', () => clients.delete(client));
    });
  };
  app.server.on('upgrade', onUpgrade);
  streamOfServer.set(app.server, { hub, clients });

  // One sweep for all clients: ping, and drop the peers that did not answer the previous ping.
  const ping = setInterval(() => {
    for (const c of clients) {
      if (c.closing) continue; // its own grace timer ends it
      if (!c.alive) {
        streamDisconnects.inc({ reason: 'dead_peer' });
        c.ws.terminate();
        continue;
      }
      c.alive = false;
      c.ws.ping();
    }
  }, settings.pingIntervalMs);
  ping.unref();

  // The key store reloads the key file on change; a key that stopped verifying ends its streams.
  const recheck = setInterval(() => {
    for (const c of clients) {
      if (c.closing || keys.verify(c.apiKey)) continue;
      c.send(
        JSON.stringify({
          type: 'error',
          id: null,
          error: envelope('unauthorized', 'The API key was revoked; this stream is closed.', randomUUID()).error,
        }),
      );
      streamDisconnects.inc({ reason: 'key_revoked' });
      c.kick(1008, 'api key revoked');
    }
  }, settings.authRecheckMs);
  recheck.unref();

  // A plain GET (no upgrade) gets a pointer instead of a bare 404. Its schema documents the
  // upgrade in the OpenAPI document; unknown parameters are left to the pointer (no additionalProperties).
  app.get(
    '/stream',
    {
      schema: {
        description:
          'WebSocket (API.md §7): send Upgrade: websocket; subscribe with {"op": "subscribe", "channel": "book", "family", ' +
          '"market_id" | "ticker", "coin"}. The key is the Bearer header or api_key. A refused upgrade answers the status and the error ' +
          'envelope; a plain GET answers 400 with this pointer.',
        querystring: {
          type: 'object',
          properties: {
            api_key: { type: 'string', description: 'the API key, for clients that cannot set the Authorization header' },
            family: { type: 'string', description: 'comma list of the families to be subscribed (a plan without one is refused with 403)' },
          },
        },
        response: { 101: { description: 'Switching Protocols: the WebSocket stream' }, ...errorResponses([400, 401, 403]) },
      },
    },
    async () => {
      throw new PmtapeError('invalid_parameter', `${path} is a WebSocket endpoint: connect with a WebSocket client (Upgrade: websocket).`);
    },
  );

  // preClose: open sockets would otherwise keep the HTTP server from closing.
  app.addHook('preClose', async () => {
    clearInterval(ping);
    clearInterval(recheck);
    app.server.off('upgrade', onUpgrade);
    for (const c of clients) c.ws.terminate();
    hub.stopAll();
    wss.close();
  });
}
