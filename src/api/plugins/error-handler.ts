// The one place errors become responses: the contract's envelope with the request id, on every
// status (validation, auth, rate limit, unknown routes and markets). 5xx messages are hidden from
// the client and logged with the request id instead.

import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { routeTally } from './request-metrics.js';
import { ERROR_STATUS, PmtapeError, type ErrorCode } from '../../errors.js';

export interface Envelope {
  error: { status: number; code: ErrorCode; message: string; request_id: string };
}

export function envelope(code: ErrorCode, message: string, requestId: string): Envelope {
  return { error: { status: ERROR_STATUS[code], code, message, request_id: requestId } };
}

/** The challenge of every 401 (RFC 6750): the scheme the key is sent with. */
export const BEARER_CHALLENGE = 'Bearer realm="pmtape"';

/**
 * The raw HTTP answer to a request Node's parser refused before Fastify saw it (a byte not allowed in
 * a request line, a request line plus headers over the size limit, a request not finished in time):
 * the same envelope as every other error, instead of Fastify's own body. Null when nothing is to be
 * written (the peer reset the connection).
 */
export function clientErrorResponse(err: { code?: string }, requestId: string): string | null {
  if (err.code === 'ECONNRESET') return null;
  const [code, message]: [ErrorCode, string] =
    err.code === 'HPE_HEADER_OVERFLOW'
      ? ['request_too_large', 'The request line and headers are larger than the server accepts (16 KiB in all); shorten the query string.']
      : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? ['request_timeout', 'The request was not completed in time; send the whole request at once.']
        : [
            'invalid_parameter',
            'The request is not valid HTTP: the URL or a header holds a byte that is not allowed (a raw non-ASCII or control character); percent-encode the query.',
          ];
  const body = JSON.stringify(envelope(code, message, requestId));
  const status = ERROR_STATUS[code];
  const reason = status === 431 ? 'Request Header Fields Too Large' : status === 408 ? 'Request Timeout' : 'Bad Request';
  return (
    `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
    `x-request-id: ${requestId}\r\nConnection: close\r\n\r\n${body}`
  );
}

interface AjvError {
  instancePath?: string;
  keyword?: string;
  params?: Record<string, unknown>;
  message?: string;
}

/** A sentence naming the offending parameter of a schema validation failure. */
export function validationMessage(errors: AjvError[], context: string | undefined): string {
  const e = errors[0] ?? {};
  const where = context === 'params' ? 'Path segment' : 'Parameter';
  if (e.keyword === 'additionalProperties') {
    return `${where} '${String(e.params?.additionalProperty)}' is not known for this route.`;
  }
  if (e.keyword === 'required') return `${where} '${String(e.params?.missingProperty)}' is required.`;
  const name = (e.instancePath ?? '').replace(/^\//, '').split('/')[0] || 'query';
  if (e.keyword === 'enum') {
    const allowed = (e.params?.allowedValues as unknown[] | undefined)?.join(', ');
    return `${where} '${name}' must be one of: ${allowed}.`;
  }
  return `${where} '${name}' ${e.message ?? 'is invalid'}.`;
}

/** Headers an error asks to be answered with (http-errors' `headers`, e.g. Content-Range on a 416). */
function errorHeaders(err: unknown): Record<string, string> {
  const h = (err as { headers?: unknown }).headers;
  return h && typeof h === 'object' ? (h as Record<string, string>) : {};
}

function toEnvelope(err: FastifyError | PmtapeError, req: FastifyRequest): { code: ErrorCode; message: string } {
  if (err instanceof PmtapeError) return { code: err.code, message: err.message };
  if (err.validation) return { code: 'invalid_parameter', message: validationMessage(err.validation, err.validationContext) };
  const status = err.statusCode ?? 500;
  if (status === 429)
    return { code: 'rate_limited', message: `Rate limit exceeded for this key; retry after the number of seconds in Retry-After.` };
  if (status === 404) return { code: 'not_found', message: `No route ${req.method} ${req.url.split('?')[0]}.` };
  if (status === 401) return { code: 'unauthorized', message: err.message };
  if (status === 416) {
    // From @fastify/static serving a dataset file: its Content-Range header (`bytes */<size>`) names the size.
    const size = /\/(\d+)$/.exec(String(errorHeaders(err)['Content-Range'] ?? ''))?.[1];
    return { code: 'range_not_satisfiable', message: `Header 'Range' asks for bytes outside the file${size ? ` (${size} bytes)` : ''}.` };
  }
  if (status >= 400 && status < 500) return { code: 'invalid_parameter', message: err.message };
  return { code: 'internal', message: `Internal error; quote request_id ${req.id} when reporting it.` };
}

async function errorPlugin(app: FastifyInstance): Promise<void> {
  app.setErrorHandler((err: FastifyError, req: FastifyRequest, reply: FastifyReply) => {
    const { code, message } = toEnvelope(err, req);
    const status = ERROR_STATUS[code];
    if (status >= 500) app.pmtape.log.error({ err, request_id: req.id }, 'request failed');
    const contentRange = code === 'range_not_satisfiable' ? errorHeaders(err)['Content-Range'] : undefined;
    if (contentRange) void reply.header('Content-Range', contentRange); // RFC 9110: a 416 names the file's size
    if (code === 'unauthorized') void reply.header('WWW-Authenticate', BEARER_CHALLENGE); // RFC 9110 §11.6.1: a 401 names its scheme
    // Other client errors of the framework (413, 415, bad URL encoding) are answered as 400.
    void reply
      .code(status)
      .type('application/json; charset=utf-8')
      .send(envelope(code, message, String(req.id)));
  });
  // Unmatched URLs reach no route, so no route hook: the header and the tally are set here.
  const unknown = routeTally('unknown');
  app.setNotFoundHandler((req: FastifyRequest, reply: FastifyReply) => {
    unknown.record(404, 0); // no route hook ran to start a clock; the latency of a 404 says nothing
    app.pmtape.requestLog?.(req, reply.code(404), 0);
    void reply
      .code(404)
      .header('x-request-id', req.id)
      .send(
        envelope('not_found', `No route ${req.method} ${req.url.split('?')[0].slice(0, 200)}; see /docs for the routes.`, String(req.id)),
      );
  });
}

export default fp(errorPlugin, { name: 'pmtape-errors' });
