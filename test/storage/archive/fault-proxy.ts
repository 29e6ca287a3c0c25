// A small HTTP proxy in front of the S3 server that breaks a share of requests the ways object
// stores and networks do: 503 SlowDown, a reset before or after the server acted, a response body
// cut short, an upload body cut short. Seeded, so a run's faults are the same every time. `hold`
// keeps chosen requests unanswered (a stalled upload) until the proxy closes.

import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { rng } from '../../../tools/fixtures/compaction-logs.js';

export type Fault = 'slowdown' | 'reset-before' | 'reset-after' | 'truncate-response' | 'truncate-upload';
const FAULTS: Fault[] = ['slowdown', 'reset-before', 'reset-after', 'truncate-response', 'truncate-upload'];

export interface FaultProxy {
  readonly url: string;
  /** Share of requests broken (0..1); changeable between phases. */
  rate: number;
  /** Requests seen, and faults injected by kind. */
  readonly stats: { requests: number; faults: Record<Fault, number>; held: number; log: string[] };
  /** When set and true for a request, the proxy reads it and never answers. */
  hold: ((req: IncomingMessage) => boolean) | null;
  close(): Promise<void>;
}

const SLOWDOWN = '<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>';

export async function startFaultProxy(target: string, rate: number, seed = 36): Promise<FaultProxy> {
  const up = new URL(target);
  const r = rng(seed);
  const held: IncomingMessage[] = [];
  let injected = 0;
  const stats = { requests: 0, faults: Object.fromEntries(FAULTS.map((f) => [f, 0])) as Record<Fault, number>, held: 0, log: [] as string[] };
  const forward = (req: IncomingMessage, res: ServerResponse, fault: Fault | null): void => {
    const out = request({ host: up.hostname, port: up.port, method: req.method, path: req.url, headers: req.headers }, (ures) => {
      if (fault === 'reset-after') {
        ures.resume();
        ures.on('end', () => req.socket.destroy());
        return;
      }
      res.writeHead(ures.statusCode ?? 502, ures.headers);
      if (fault === 'truncate-response') {
        const len = Number(ures.headers['content-length'] ?? 0);
        let sent = 0;
        ures.on('data', (d: Buffer) => {
          const room = Math.floor(len / 2) - sent;
          if (room > 0) res.write(d.subarray(0, room));
          sent += d.length;
          if (sent >= len / 2) {
            ures.destroy();
            req.socket.destroy();
          }
        });
        ures.on('end', () => req.socket.destroy());
        return;
      }
      ures.pipe(res);
    });
    out.on('error', () => req.socket.destroy());
    // A client gone before its answer (killed, timed out) cuts the upstream request too, as a
    // network would: the server sees a request body that stops short.
    res.on('close', () => {
      if (!res.writableFinished) out.destroy();
    });
    if (fault === 'truncate-upload') {
      // Half the body reaches the server, then both sides are cut.
      const len = Number(req.headers['content-length'] ?? 0);
      let sent = 0;
      req.on('data', (d: Buffer) => {
        const room = Math.floor(len / 2) - sent;
        if (room > 0) out.write(d.subarray(0, room));
        sent += d.length;
        if (sent >= len / 2) {
          out.destroy();
          req.socket.destroy();
        }
      });
      req.on('end', () => {
        out.destroy();
        req.socket.destroy();
      });
      return;
    }
    req.pipe(out);
  };
  const server: Server = createServer((req, res) => {
    stats.requests++;
    stats.log.push(`${req.method} ${decodeURIComponent(req.url ?? '')}`);
    if (proxy.hold?.(req)) {
      stats.held++;
      held.push(req);
      req.resume();
      return;
    }
    // Which requests fail is random (seeded: bursts happen); the kinds take turns, so every kind
    // is injected once a handful of faults were.
    const fault = r() < proxy.rate ? FAULTS[injected++ % FAULTS.length] : null;
    if (fault) stats.faults[fault]++;
    if (fault === 'slowdown') {
      req.resume();
      req.on('end', () => {
        res.writeHead(503, { 'content-type': 'application/xml', 'content-length': Buffer.byteLength(SLOWDOWN) });
        res.end(req.method === 'HEAD' ? undefined : SLOWDOWN);
      });
      return;
    }
    if (fault === 'reset-before') {
      req.socket.destroy();
      return;
    }
    forward(req, res, fault);
  });
  server.keepAliveTimeout = 1000;
  await new Promise<void>((res) => server.listen(0, '127.0.0.1', res));
  const proxy: FaultProxy = {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    rate,
    stats,
    hold: null,
    close: () =>
      new Promise((res) => {
        for (const h of held) h.socket.destroy();
        server.closeAllConnections();
        server.close(() => res());
      }),
  };
  return proxy;
}
