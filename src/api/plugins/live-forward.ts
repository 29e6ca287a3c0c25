// `serve --live-from <url>`: a stateless reader answers closed days from the archive and hands the
// rest to a server that holds the logs. A request is forwarded whole (status, headers and body
// relayed as they stream) unless it bounds itself at or before the end of the last archived day
// (`end_time` or `as_of`); the datasets routes, health, metrics and docs are always local. The
// live stream's WebSocket upgrade is relayed byte for byte to the live server. The reader checks
// the key first (its own key file) and passes the Authorization header on, so both must know it.

import { connect as tcpConnect, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { Readable } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { PmtapeError } from '../../errors.js';

export interface LiveForwardOptions {
  /** The live server's base URL (http or https). */
  readonly url: string;
  /** End of the last archived day (epoch ms, exclusive); -Infinity when none is archived yet. */
  readonly archiveEnd: () => number;
}

/** Routes a reader always answers itself. */
const LOCAL = /^\/(v3\/datasets|healthz|metrics|docs|$)/;

/** A time parameter as epoch ms (numbers or ISO 8601), or null when absent or not a time. */
function msOf(v: unknown): number | null {
  if (typeof v !== 'string' || v === '') return null;
  const ms = /^\d+$/.test(v) ? Number(v) : Date.parse(v);
  return Number.isFinite(ms) ? ms : null;
}

/** True when the request may need records newer than the archive holds. */
export function reachesPastArchive(path: string, query: Readonly<Record<string, unknown>>, archiveEnd: number): boolean {
  if (LOCAL.test(path.slice(0, path.indexOf('?') >>> 0))) return false;
  const bound = msOf(query.end_time) ?? msOf(query.as_of);
  return bound === null || bound > archiveEnd;
}

/** Response headers that describe the hop, not the answer. */
const HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'content-length', 'content-encoding']);

async function forward(base: string, req: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
  const headers: Record<string, string> = {};
  for (const h of ['authorization', 'accept', 'range', 'if-none-match', 'if-range']) {
    const v = req.headers[h];
    if (typeof v === 'string') headers[h] = v;
  }
  const res = await fetch(new URL(req.url, base), { method: req.method, headers, redirect: 'manual' });
  void reply.code(res.status);
  res.headers.forEach((v, k) => {
    if (!HOP.has(k) && k !== 'x-request-id') void reply.header(k, v);
  });
  void reply.header('x-pmtape-forwarded', 'live');
  return reply.send(res.body ? Readable.fromWeb(res.body as import('node:stream/web').ReadableStream) : null);
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

async function liveForward(app: FastifyInstance, opts: LiveForwardOptions): Promise<void> {
  const base = new URL(opts.url);
  app.addHook('preHandler', async (req, reply) => {
    if (!reachesPastArchive(req.url, req.query as Record<string, unknown>, opts.archiveEnd())) return;
    try {
      return await forward(opts.url, req, reply);
    } catch (e) {
      throw new PmtapeError(
        'upstream_unavailable',
        `The live server ${opts.url} did not answer (${(e as Error).message}); times up to the archive's end (end_time or as_of) are served here.`,
      );
    }
  });
  app.server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => relayUpgrade(base, req, socket, head));
}

export default fp(liveForward, { name: 'pmtape-live-forward' });
