// The request log: one line per answered request, the audit trail of who read what (docs/api.md,
// "Request log"). It replaces Fastify's own request logging, which writes two lines per request
// (incoming, completed) through a child logger made for each request and its request/response
// serializers; with a line written synchronously to stdout per call that held the default `serve`
// to half the throughput of a bare route. Here: one flat object per request, logged on the
// process's logger (no child), from the route hook that already runs at `onSend` (route-hooks.ts)
// and from the handlers of answers no route hook sees (unknown URLs, router errors).
//
// `serve`'s logger writes to a buffered stdout (`bufferedStdout`): lines are gathered up to
// BUFFER_BYTES and written in one call, at the latest FLUSH_MS after they were logged, and flushed
// synchronously when the process exits (pino registers that for an asynchronous destination).
// A SIGKILL loses at most the last FLUSH_MS of lines.
//
// What a line holds is one function, `requestLine`, so that what must never be logged (a key in
// the URL, headers) is taken out in one place.

import type { FastifyBaseLogger, FastifyReply, FastifyRequest } from 'fastify';
import { pino } from 'pino';
import { redactUrl } from '../redact.js';

/** Bytes of log lines gathered before one write to stdout. */
const BUFFER_BYTES = 4096;
/** The longest a logged line waits in the buffer (ms). */
const FLUSH_MS = 500;

/** What one request line holds (besides pino's `level`, `time` and `msg: "request"`). */
export interface RequestLine {
  request_id: string;
  method: string;
  url: string;
  status: number;
  /** Time to the first byte of the answer (ms, 0.01 ms precision); 0 for unknown URLs. */
  ms: number;
  /** The id of the key that was checked (never the key), or null on open routes and refusals. */
  key: string | null;
  /** The client's address as the socket sees it (a proxy's address behind a proxy). */
  ip: string | undefined;
}

/** The URL as logged: credentials sent in it (`?api_key=`, a key in the path) redacted (redact.ts). */
export function loggedUrl(url: string): string {
  return redactUrl(url);
}

export function requestLine(req: FastifyRequest, status: number, ms: number): RequestLine {
  return {
    request_id: String(req.id),
    method: req.method,
    url: loggedUrl(req.url),
    status,
    ms: Math.round(ms * 100) / 100,
    key: req.apiKey?.id ?? null,
    ip: req.socket?.remoteAddress,
  };
}

/** Logs one answered request. */
export type RequestLog = (req: FastifyRequest, reply: FastifyReply, ms: number) => void;

/** The request log on `log`, or null when its level is above `info` (then nothing per request). */
export function requestLog(log: FastifyBaseLogger): RequestLog | null {
  if (!['info', 'debug', 'trace'].includes(log.level)) return null;
  return (req, reply, ms) => log.info(requestLine(req, reply.statusCode, ms), 'request');
}

/** A serving process's stdout for pino: buffered, flushed every FLUSH_MS and at exit. */
export function bufferedStdout(): pino.DestinationStream {
  const dest = pino.destination({ dest: 1, minLength: BUFFER_BYTES, sync: false });
  setInterval(() => {
    try {
      dest.flush();
    } catch {
      // A destination closed by the exit path: nothing left to flush.
    }
  }, FLUSH_MS).unref();
  return dest;
}
