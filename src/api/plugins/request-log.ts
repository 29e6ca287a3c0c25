// The request log: one line per answered request, the audit trail of who read what (docs/api.md,
// "Request log"). It replaces Fastify's own request logging, which writes two lines per request
// (incoming, completed) through a child logger made for each request and its request/response
// serializers; with a line written synchronously to stdout per call that held the default `serve`
// to half the throughput of a bare route. Here: one flat object per request, logged on the
// process's logger (no child), from the route hook that already runs at `onSend` (route-hooks.ts)
// and from the handlers of answers no route hook sees (unknown URLs, router errors).
//
// `serve`'s logger writes to a buffered stdout (`bufferedStdout`): every line, the request lines and
// pino's own, is gathered in one string (so their order holds) up to BUFFER_BYTES and handed to
// pino's asynchronous destination in one write, at the latest FLUSH_MS after it was logged, and
// flushed synchronously when the process exits. A SIGKILL loses at most the last FLUSH_MS of lines.
// On that buffer a request line is written as text directly (`fastLine`), in the very format pino
// writes (its level, time and bindings strings): pino's object walk and its destination's per-line
// write were a fifth of a `latest` request's CPU (docs/benchmarks.md, "the request log").
//
// What a line holds is one function, `requestLine`, so that what must never be logged (a key in
// the URL, headers) is taken out in one place.

import type { FastifyBaseLogger, FastifyReply, FastifyRequest } from 'fastify';
import { pino } from 'pino';
import { redactUrl } from '../redact.js';

/** Bytes of log lines gathered before one write to stdout. */
const BUFFER_BYTES = 16_384;
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
  const fast = fastLine(log);
  if (fast) return (req, reply, ms) => fast(requestLine(req, reply.statusCode, ms));
  return (req, reply, ms) => log.info(requestLine(req, reply.statusCode, ms), 'request');
}

const q = JSON.stringify;

/**
 * Writes a request line as text onto the logger's LineBuffer, byte for byte what `log.info(line,
 * 'request')` writes with pino's default options (level, time, bindings, the fields, msg); null for
 * any other logger (a test's capture, custom formatters), which then logs through pino.
 */
function fastLine(log: FastifyBaseLogger): ((l: RequestLine) => void) | null {
  const l = log as unknown as Record<symbol, unknown>;
  const sym = pino.symbols;
  const stream = l[sym.streamSym];
  const formatters = l[sym.formattersSym] as { log?: unknown; bindings?: unknown; level?: unknown } | undefined;
  if (!(stream instanceof LineBuffer) || l[sym.messageKeySym] !== 'msg' || formatters?.log || l[sym.mixinSym] || l[sym.nestedKeySym])
    return null;
  const head = (l[sym.lsCacheSym] as Record<number, string>)[(log as pino.Logger).levels.values.info];
  const time = l[sym.timeSym] as () => string;
  const chindings = l[sym.chindingsSym] as string;
  if (typeof head !== 'string' || typeof time !== 'function' || typeof chindings !== 'string') return null;
  return (r) => {
    stream.write(
      `${head}${time()}${chindings},"request_id":${q(r.request_id)},"method":${q(r.method)},"url":${q(r.url)},"status":${r.status},` +
        `"ms":${r.ms},"key":${r.key === null ? 'null' : q(r.key)}${r.ip === undefined ? '' : `,"ip":${q(r.ip)}`},"msg":"request"}\n`,
    );
  };
}

/**
 * Lines gathered in one string in front of pino's asynchronous destination, handed over a
 * BUFFER_BYTES at a time (its own buffering costs per line: a length count and a concatenation).
 */
export class LineBuffer {
  private buf = '';
  constructor(private readonly dest: pino.DestinationStream & { flushSync(): void }) {}

  write(line: string): boolean {
    this.buf += line;
    if (this.buf.length >= BUFFER_BYTES) this.flush();
    return true;
  }

  /** Hands what is gathered to the destination (which writes it asynchronously). */
  flush(): void {
    if (this.buf.length === 0) return;
    const text = this.buf;
    this.buf = '';
    this.dest.write(text);
  }

  /** Everything written before returning (process exit). */
  flushSync(): void {
    this.flush();
    this.dest.flushSync();
  }
}

/** A serving process's stdout for pino: buffered, flushed every FLUSH_MS and at exit. */
export function bufferedStdout(): LineBuffer {
  const lines = new LineBuffer(pino.destination({ dest: 1, sync: false }));
  setInterval(() => {
    try {
      lines.flush();
    } catch {
      // A destination closed by the exit path: nothing left to flush.
    }
  }, FLUSH_MS).unref();
  process.once('exit', () => {
    try {
      lines.flushSync();
    } catch {
      // stdout already gone (a closed pipe): nothing to save.
    }
  });
  return lines;
}
