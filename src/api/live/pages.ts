// One page of a seq-paged list (raw snapshots, timeseries) whose range spans the archive's end,
// stitched from both sides exactly as one server holding every day would page it. Ascending pages
// read the reader's archive first and the live server after it; descending pages the other way.
// The first side is asked with the part header (routes/helpers.ts): a page that exhausted its side
// still carries a cursor after its last item, which the second side continues from (seq positions
// are the same on both: seq never repeats per market across days). Cursors stay the routes' own,
// signed with the secret both servers share, so a client follows them across the boundary.

import type { FastifyRequest } from 'fastify';
import { PAGE_HEADER, PART_HEADER } from './split.js';
import { withParams, type Side } from './sides.js';

/** The default page size of the list routes (API.md §2). */
const DEFAULT_LIMIT = 100;

interface PageBody {
  data: unknown[];
  next_cursor: string | null;
}

export type Stitched = { readonly relay: Response } | { readonly body: string };

async function pageOf(side: Side, res: Response): Promise<PageBody> {
  const text = await res.text();
  try {
    const body = JSON.parse(text) as PageBody;
    if (Array.isArray(body.data) && (typeof body.next_cursor === 'string' || body.next_cursor === null)) return body;
  } catch {
    // fall through: not a page
  }
  throw side.failed(`answered something that is not a page (${text.slice(0, 120)})`);
}

/**
 * The second side's answer must be a page: anything else is that side failing, said so. It is
 * asked with the part header too (the reader's own side answers only such requests itself), so a
 * page that exhausted it carries a tail cursor: past the second side there is nothing, hence null.
 */
async function secondPage(side: Side, res: Response): Promise<PageBody> {
  if (res.status === 200) {
    const page = await pageOf(side, res);
    const kind = res.headers.get(PAGE_HEADER);
    return kind === 'tail' || kind === 'end' ? { data: page.data, next_cursor: null } : page;
  }
  const text = await res.text();
  const why = /"message":"((?:[^"\\]|\\.)*)"/.exec(text)?.[1] ?? text.slice(0, 120);
  const hint = /cursor/.test(why) ? " (does it share this reader's api/cursor.secret?)" : '';
  throw side.failed(`answered ${res.status} to the continuation of a page${hint}: ${why}`);
}

/**
 * The page `req.url` asks for, from `first` then `second`. `token` is the part header's value.
 * Answers of the first side that are not a 200 page are relayed as they are (bad input, 404 …).
 */
export async function stitchPage(req: FastifyRequest, first: Side, second: Side, token: string): Promise<Stitched> {
  const url = req.url;
  const a = await first.get(req, url, { [PART_HEADER]: token });
  if (a.status !== 200) return { relay: a };
  const kind = a.headers.get(PAGE_HEADER);
  if (kind === null) throw first.failed("does not stitch pages (no x-pmtape-page header): give it this reader's api/cursor.secret");
  const head = await pageOf(first, a);
  if (kind === 'more') return { body: JSON.stringify(head) };
  const limitParam = (req.query as Record<string, unknown>).limit;
  const limit = limitParam === undefined ? DEFAULT_LIMIT : Number(limitParam);
  const query = req.query as Record<string, unknown>;
  // Where the second side continues: after the first side's last item, else where the request was.
  const cursor = kind === 'tail' ? head.next_cursor! : typeof query.cursor === 'string' ? query.cursor : undefined;
  if (head.data.length >= limit) {
    // A full page: the cursor after it is worth giving only when the second side has more.
    const probe = await secondPage(second, await second.get(req, withParams(url, { cursor, limit: '1' }), { [PART_HEADER]: token }));
    const more = probe.data.length > 0 || probe.next_cursor !== null;
    return { body: JSON.stringify({ data: head.data, next_cursor: more ? cursor! : null }) };
  }
  const rest = await secondPage(
    second,
    await second.get(req, withParams(url, { cursor, limit: String(limit - head.data.length) }), { [PART_HEADER]: token }),
  );
  return { body: JSON.stringify({ data: [...head.data, ...rest.data], next_cursor: rest.next_cursor }) };
}
