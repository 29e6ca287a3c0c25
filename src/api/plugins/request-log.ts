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
// pino's asynchronous destination as bytes in one write, at the latest FLUSH_MS after it was
// logged, and flushed synchronously when the process exits. A SIGKILL loses at most the last
// FLUSH_MS of lines. The destination takes bytes (sonic-boom's buffer mode): handed a string it
// measures it, encodes it for the write and encodes it again when the write completes.
// On that buffer a request line is written as text directly (`fastLine`), in the very format pino
// writes (its level, time and bindings strings): pino's object walk and its destination's per-line
// write were a fifth of a `latest` request's CPU (docs/benchmarks.md, "the request log"). The parts
// of a line that repeat from request to request (the URL redacted and quoted, the key id, the
// client address) are made once and kept in small bounded maps.

// What a line holds is one function, `requestLine`, so that what must never be logged (a key in
// the URL, headers) is taken out in one place.

import type { FastifyBaseLogger, FastifyReply, FastifyRequest } from 'fastify';
import { pino } from 'pino';
import { redactUrl } from '../redact.js';

/** Bytes of log lines gathered before one write to stdout. */
const BUFFER_BYTES = 65_536;
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
  return fastLine(log) ?? ((req, reply, ms) => log.info(requestLine(req, reply.statusCode, ms), 'request'));
}

const q = JSON.stringify;

/** Most entries of each map of repeated line parts; a full map is emptied (a flood of new URLs). */
const PARTS_MAX = 512;
/** Longer values are quoted per request, never kept. */
const PART_CHARS = 256;

/** A line part made from a value that repeats (`make` is pure), kept per value. */
class Parts {
  private readonly made = new Map<string, string>();
  constructor(
    private readonly make: (v: string) => string,
    /** Keep only parts for which this holds (a URL that held a secret is never kept). */
    private readonly keep: (v: string, part: string) => boolean = () => true,
  ) {}

  of(v: string): string {
    let part = this.made.get(v);
    if (part !== undefined) return part;
    part = this.make(v);
    if (v.length <= PART_CHARS && this.keep(v, part)) {
      if (this.made.size >= PARTS_MAX) this.made.clear();
      this.made.set(v, part);
    }
    return part;
  }
}

/**
 * Writes a request line as text onto the logger's LineBuffer, byte for byte what `log.info(line,
 * 'request')` writes with pino's default options (level, time, bindings, the fields, msg); null for
 * any other logger (a test's capture, custom formatters), which then logs through pino. The line's
 * fields and their order are `requestLine`'s.
 */
function fastLine(log: FastifyBaseLogger): RequestLog | null {
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
  const start = `${chindings},"request_id":`;
  // The URL as logged (redacted) and quoted, after its method; one map per method. A URL that held
  // a credential is not kept (its redaction is made again per request).
  const urls = new Map<string, Parts>();
  const urlsOf = (method: string): Parts => {
    let p = urls.get(method);
    if (p === undefined) {
      const m = `,"method":${q(method)},"url":`;
      urls.set(
        method,
        (p = new Parts(
          (u) => `${m}${q(loggedUrl(u))},"status":`,
          (u, part) => part === `${m}${q(u)},"status":`,
        )),
      );
    }
    return p;
  };
  const statuses: string[] = [];
  const keys = new Parts((k) => `,"key":${q(k)}`);
  const tail = ',"msg":"request"}\n';
  const ips = new Parts((ip) => `,"ip":${q(ip)}${tail}`);
  return (req, reply, ms) => {
    const key = req.apiKey?.id;
    const ip = req.socket?.remoteAddress;
    const status = reply.statusCode;
    stream.write(
      head +
        time() +
        start +
        q(String(req.id)) +
        urlsOf(req.method).of(req.url) +
        (statuses[status] ??= `${status},"ms":`) +
        Math.round(ms * 100) / 100 +
        (key === undefined ? ',"key":null' : keys.of(key)) +
        (ip === undefined ? tail : ips.of(ip)),
    );
  };
}

/** Where a LineBuffer hands its bytes: pino's destination in buffer mode (or a test's capture). */
export interface ByteDestination {
  write(bytes: Buffer): unknown;
  flushSync(): void;
}

/**
 * Lines gathered in one string in front of pino's asynchronous destination, handed over as bytes a
 * BUFFER_BYTES at a time (its own buffering costs per line: a length count and a concatenation).
 */
export class LineBuffer {
  private buf = '';
  constructor(private readonly dest: ByteDestination) {}

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
    this.dest.write(Buffer.from(text));
  }

  /** Everything written before returning (process exit). */
  flushSync(): void {
    this.flush();
    this.dest.flushSync();
  }
}

/** A serving process's stdout for pino: buffered, flushed every FLUSH_MS and at exit. */
export function bufferedStdout(): LineBuffer {
  // In buffer mode sonic-boom's write takes a Buffer (its type declarations name only strings).
  const lines = new LineBuffer(pino.destination({ dest: 1, sync: false, contentMode: 'buffer' }) as unknown as ByteDestination);
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
