// Small pieces the route plugins share: cursor decode/encode bound to a logical route.

import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { PmtapeError } from '../../errors.js';
import type { CursorPos } from '../query/cursor.js';
import type { ListParams, Query } from '../query/params.js';
import { isPart, PAGE_HEADER } from '../live/split.js';

/** The resume seq of a cursor for a snapshot-like route (asc: `after`, desc: `before`). */
export function resumeOf(app: FastifyInstance, route: string, query: Query, lp: ListParams): number | undefined {
  if (lp.cursor === undefined) return undefined;
  const pos = app.pmtape.cursors.decode(lp.cursor, route, query);
  const v = lp.order === 'desc' ? pos.before : pos.after;
  if (typeof v !== 'number' || !Number.isSafeInteger(v))
    throw new PmtapeError('invalid_cursor', "Parameter 'cursor' does not belong to this route.");
  return v;
}

export function nextCursor(app: FastifyInstance, route: string, query: Query, pos: CursorPos | null): string | null {
  return pos === null ? null : app.pmtape.cursors.encode(route, query, pos);
}

/**
 * `next_cursor` of a seq-paged route. On a stitching request, a page that exhausted the log still
 * gets a cursor after its last item, and the response says which kind it is (PAGE_HEADER).
 */
export function pageCursor(
  app: FastifyInstance,
  req: FastifyRequest,
  reply: FastifyReply,
  route: string,
  query: Query,
  page: { readonly next: CursorPos | null; readonly tail?: CursorPos | null },
  extra: CursorPos = {},
): string | null {
  const part = isPart(app, req);
  if (page.next !== null) {
    if (part) void reply.header(PAGE_HEADER, 'more');
    return app.pmtape.cursors.encode(route, query, { ...page.next, ...extra });
  }
  if (!part) return null;
  void reply.header(PAGE_HEADER, page.tail ? 'tail' : 'end');
  return page.tail ? app.pmtape.cursors.encode(route, query, { ...page.tail, ...extra }) : null;
}
