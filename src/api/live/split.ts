// Which side answers a request on a reader with `--live-from` (docs/archive.md, "Stateless readers"):
// the reader itself (everything at or before the archive's end), the live server (everything after
// it, or a route that is not stitched), or both, stitched into the one answer a server holding every
// day would give: seq-paged lists (raw snapshots, timeseries) and replay.
//
// The handshake of a stitched answer (src/api/live/): a reader asks itself and its live server for
// one side of a page or replay with the part header, whose value only servers sharing the cursor
// secret know (CursorCodec.partToken). Such a request is this server's own side (never forwarded)
// and is not counted against the key's rate a second time: the client's request was counted.

import type { FastifyInstance, FastifyRequest } from 'fastify';

/** Routes a reader always answers itself. */
const LOCAL = /^\/(v3\/datasets|healthz|metrics|docs|$)/;

/** Routes whose pages are stitched: cursors resume by seq on either side. */
const SEQ_PAGED = /^\/v3\/.+\/(snapshots|timeseries)$/;

export type Split = 'local' | 'live' | 'page' | 'replay';

/** A time parameter as epoch ms (numbers or ISO 8601), or null when absent or not a time. */
export function msOf(v: unknown): number | null {
  if (typeof v !== 'string' || v === '') return null;
  const ms = /^\d+$/.test(v) ? Number(v) : Date.parse(v);
  return Number.isFinite(ms) ? ms : null;
}

/** The path of a request URL, without its query. */
export const pathOf = (url: string): string => url.slice(0, url.indexOf('?') >>> 0);

/**
 * Who answers `path` with `query` when the archive ends at `archiveEnd` (epoch ms, exclusive).
 * Bad input goes to whichever side answers first: both check it the same way.
 */
export function splitOf(path: string, query: Readonly<Record<string, unknown>>, archiveEnd: number): Split {
  if (LOCAL.test(path)) return 'local';
  const end = msOf(query.end_time) ?? msOf(query.as_of);
  if (end !== null && end <= archiveEnd) return 'local';
  const start = msOf(query.start_time);
  if (start !== null && start >= archiveEnd) return 'live';
  if (!Number.isFinite(archiveEnd)) return 'live';
  if (path === '/v3/replay') return start === null ? 'live' : 'replay';
  const interval = query.interval;
  if (SEQ_PAGED.test(path) && (interval === undefined || interval === 'raw')) return 'page';
  return 'live';
}

/** True when the request may need records newer than the archive holds. */
export function reachesPastArchive(path: string, query: Readonly<Record<string, unknown>>, archiveEnd: number): boolean {
  return splitOf(pathOf(path), query, archiveEnd) !== 'local';
}

/** Request header asking for one side of a stitched answer; its value is `CursorCodec.partToken()`. */
export const PART_HEADER = 'x-pmtape-part';

/**
 * Response header of a part request to a seq-paged route: `more` (next_cursor is the next page),
 * `tail` (the log ended after these items: next_cursor resumes after them) or `end` (no items and
 * nothing more).
 */
export const PAGE_HEADER = 'x-pmtape-page';

/** True when the request asks for one side of an answer a reader stitches. */
export function isPart(app: FastifyInstance, req: FastifyRequest): boolean {
  const v = req.headers[PART_HEADER];
  return typeof v === 'string' && v === app.pmtape.cursors.partToken();
}
