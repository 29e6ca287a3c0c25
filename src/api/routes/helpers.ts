// Small pieces the route plugins share: cursor decode/encode bound to a logical route.

import type { FastifyInstance } from 'fastify';
import { PmtapeError } from '../../errors.js';
import type { CursorPos } from '../query/cursor.js';
import type { ListParams, Query } from '../query/params.js';

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
