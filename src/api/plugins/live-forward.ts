// `serve --live-from <url>`: a stateless reader answers closed days from the archive and asks a
// server that holds the logs for the rest (src/api/live/split.ts decides who answers what): a
// request bounded at or before the archive's end is answered here, seq-paged lists and replays
// that span the end are stitched from both sides (src/api/live/), and anything else that may reach
// past it is forwarded whole, its answer relayed as it streams. The datasets routes, health,
// metrics and docs are always local. The stream's WebSocket upgrade is relayed byte for byte. The
// reader checks the key first (its own key file) and passes the Authorization header on, so both
// must know it; stitching also needs both to hold the same api/cursor.secret.

import { connect as tcpConnect, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import type { AddressInfo } from 'node:net';
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { isPart, pathOf, splitOf } from '../live/split.js';
import { relay, Side } from '../live/sides.js';
import { stitchPage } from '../live/pages.js';
import { stitchReplay } from '../live/replay.js';

export { reachesPastArchive } from '../live/split.js';

export interface LiveForwardOptions {
  /** The live server's base URL (http or https). */
  readonly url: string;
  /** End of the last archived day (epoch ms, exclusive); -Infinity when none is archived yet. */
  readonly archiveEnd: () => number;
}

/** Relays a WebSocket upgrade for `path` to the live server: the request head, then both directions. */
function relayUpgrade(base: URL, req: IncomingMessage, socket: Duplex, head: Buffer): void {
  const port = Number(base.port) || (base.protocol === 'https:' ? 443 : 80);
  const up: Socket =
    base.protocol === 'https:'
      ? tlsConnect({ host: base.hostname, port, servername: base.hostname })
      : tcpConnect({ host: base.hostname, port });
  const lines = [`${req.method} ${req.url} HTTP/1.1`];
  for (let i = 0; i < req.rawHeaders.length; i += 2) {
    const k = req.rawHeaders[i];
    lines.push(`${k}: ${k.toLowerCase() === 'host' ? base.host : req.rawHeaders[i + 1]}`);
  }
  up.on('connect', () => {
    up.write(`${lines.join('\r\n')}\r\n\r\n`);
    if (head.length) up.write(head);
    up.pipe(socket);
    socket.pipe(up);
  });
  up.on('secureConnect', () => up.emit('connect'));
  const close = (): void => {
    up.destroy();
    socket.destroy();
  };
  up.on('error', () => {
    if (!socket.destroyed) socket.end('HTTP/1.1 502 Bad Gateway\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
    close();
  });
  up.on('close', close);
  socket.on('error', close);
  socket.on('close', close);
}

/** This server's own loopback URL (the reader's side of a stitched answer). */
function selfUrl(app: FastifyInstance): string {
  const a = app.server.address() as AddressInfo;
  const host = a.family === 'IPv6' ? (a.address === '::' ? '[::1]' : `[${a.address}]`) : a.address === '0.0.0.0' ? '127.0.0.1' : a.address;
  return `http://${host}:${a.port}`;
}

async function liveForward(app: FastifyInstance, opts: LiveForwardOptions): Promise<void> {
  const base = new URL(opts.url);
  const live = new Side(`The live server ${opts.url}`, () => opts.url, true);
  const local = new Side('This reader', () => selfUrl(app), false);
  app.addHook('preHandler', async (req, reply) => {
    // This reader's own side of a stitched answer: answered here, from the archive.
    if (isPart(app, req)) return;
    const split = splitOf(pathOf(req.url), req.query as Record<string, unknown>, opts.archiveEnd());
    if (split === 'local') return;
    const token = app.pmtape.cursors.partToken();
    if (split === 'live') return relay(await live.get(req, req.url), reply, 'live');
    if (split === 'replay') {
      const r = await stitchReplay(req, local, live, token);
      if ('relay' in r) return r.relay.status === 404 ? relay(await live.get(req, req.url), reply, 'live') : relay(r.relay, reply, 'local');
      return reply
        .code(200)
        .header('content-type', 'application/x-ndjson; charset=utf-8')
        .header('cache-control', 'no-store')
        .header('x-pmtape-forwarded', 'stitched')
        .send(r.stream);
    }
    const asc = (req.query as Record<string, unknown>).order !== 'desc';
    const r = await stitchPage(req, asc ? local : live, asc ? live : local, token);
    // A market the archive does not know yet is the live server's alone.
    if ('relay' in r)
      return r.relay.status === 404 && asc
        ? relay(await live.get(req, req.url), reply, 'live')
        : relay(r.relay, reply, asc ? 'local' : 'live');
    return reply.code(200).header('content-type', 'application/json; charset=utf-8').header('x-pmtape-forwarded', 'stitched').send(r.body);
  });
  app.server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => relayUpgrade(base, req, socket, head));
}

export default fp(liveForward, { name: 'pmtape-live-forward' });
