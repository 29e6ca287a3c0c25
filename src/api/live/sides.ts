// The two sides a reader with `--live-from` asks: itself (over loopback, so a replay streams rather
// than being buffered) and the live server. Asking the live server fails with 502
// `upstream_unavailable` naming it, never a 500; the reader's own side failing is a bug (500).

import type { FastifyReply, FastifyRequest } from 'fastify';
import { Readable } from 'node:stream';
import type { ReadableStream } from 'node:stream/web';
import { PmtapeError } from '../../errors.js';

/** Request headers passed on to either side (the key, and what a dataset download negotiates). */
const PASSED = ['authorization', 'accept', 'range', 'if-none-match', 'if-range'];

/** Response headers that describe the hop, not the answer. */
const HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'content-length', 'content-encoding', 'x-request-id', 'date']);

export class Side {
  constructor(
    /** How messages name it: "the live server http://…" or "this reader". */
    readonly name: string,
    private readonly base: () => string,
    readonly live: boolean,
  ) {}

  /** GET `url` (path and query) with the request's key; `extra` headers added. */
  async get(req: FastifyRequest, url: string, extra: Record<string, string> = {}): Promise<Response> {
    const headers: Record<string, string> = { ...extra };
    for (const h of PASSED) {
      const v = req.headers[h];
      if (typeof v === 'string') headers[h] = v;
    }
    try {
      return await fetch(new URL(url, this.base()), { headers, redirect: 'manual' });
    } catch (e) {
      throw this.failed(`did not answer (${(e as Error).message})`);
    }
  }

  /** The error of this side failing `why`: 502 for the live server, a bug for the reader itself. */
  failed(why: string): PmtapeError {
    return this.live
      ? new PmtapeError('upstream_unavailable', `${this.name} ${why}; times up to the archive's end (end_time or as_of) are served here.`)
      : new PmtapeError('internal', `${this.name} ${why}`);
  }
}

/** Relays `res` as the answer: status, the answer's headers, the body as it streams. */
export function relay(res: Response, reply: FastifyReply, via: string): FastifyReply {
  void reply.code(res.status);
  res.headers.forEach((v, k) => {
    if (!HOP.has(k)) void reply.header(k, v);
  });
  void reply.header('x-pmtape-forwarded', via);
  return reply.send(res.body ? Readable.fromWeb(res.body as ReadableStream) : null);
}

/** `url` with `params` set (undefined removes one), keeping every other parameter as given. */
export function withParams(url: string, params: Readonly<Record<string, string | undefined>>): string {
  const u = new URL(url, 'http://x');
  for (const [k, v] of Object.entries(params)) {
    if (v === undefined) u.searchParams.delete(k);
    else u.searchParams.set(k, v);
  }
  return `${u.pathname}${u.search}`;
}
