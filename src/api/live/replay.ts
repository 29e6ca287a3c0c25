// A replay whose range spans the archive's end: the reader's own replay (records before the end,
// all it holds) and then the live server's, resumed with the `next` token of the reader's end line,
// so no line repeats or is missing at the boundary and one end line closes the stream. That end
// line lists every market of both parts (the live server's entry wins: it is the newer). When the
// live server fails after the first line, the stream ends with an `error` line (API.md §8) whose
// code is `upstream_unavailable`.

import type { FastifyRequest } from 'fastify';
import type { ReadableStream } from 'node:stream/web';
import { Readable } from 'node:stream';
import { envelope } from '../plugins/error-handler.js';
import { PmtapeError } from '../../errors.js';
import { PART_HEADER } from './split.js';
import { withParams, type Side } from './sides.js';

type MarketEntry = Record<string, unknown>;

interface EndLine {
  type: 'end';
  next: string;
  markets?: MarketEntry[];
}

/** Lines of an NDJSON body as they arrive (the last one without its newline, if any). */
async function* linesOf(res: Response): AsyncGenerator<string> {
  if (!res.body) return;
  const decoder = new TextDecoder();
  let rest = '';
  for await (const chunk of Readable.fromWeb(res.body as ReadableStream<Uint8Array>)) {
    rest += decoder.decode(chunk as Uint8Array, { stream: true });
    let nl: number;
    while ((nl = rest.indexOf('\n')) >= 0) {
      yield rest.slice(0, nl);
      rest = rest.slice(nl + 1);
    }
  }
  rest += decoder.decode();
  if (rest !== '') yield rest;
}

const idOf = (m: MarketEntry): string => {
  const id = m.market_id ?? m.ticker;
  return typeof id === 'string' ? id : '';
};

/** Both parts' market lists as one, by id (the later part's entry wins), sorted as a replay sorts them. */
function mergeMarkets(a: MarketEntry[] = [], b: MarketEntry[] = []): MarketEntry[] {
  const byId = new Map<string, MarketEntry>();
  for (const m of [...a, ...b]) byId.set(idOf(m), m);
  return [...byId.values()].sort((x, y) => (idOf(x) < idOf(y) ? -1 : idOf(x) > idOf(y) ? 1 : 0));
}

const errorLine = (e: PmtapeError, requestId: string): string =>
  JSON.stringify({ type: 'error', error: envelope(e.code, e.message, requestId).error });

/**
 * The stitched replay of `req.url`, or the reader's own answer to relay when it is not a replay
 * (bad input is answered there, before anything is streamed).
 */
export async function stitchReplay(
  req: FastifyRequest,
  local: Side,
  live: Side,
  token: string,
): Promise<{ readonly relay: Response } | { readonly stream: Readable }> {
  // The live server is asked first whether it is there at all: down before the first line is a 502.
  const up = await live.get(req, '/healthz');
  await up.body?.cancel();
  const first = await local.get(req, req.url, { [PART_HEADER]: token });
  if (first.status !== 200) return { relay: first };
  async function* lines(): AsyncGenerator<string> {
    let held: string | null = null;
    for await (const line of linesOf(first)) {
      if (held !== null) yield `${held}\n`;
      held = line;
    }
    const end = held === null ? null : (JSON.parse(held) as EndLine | { type: string });
    if (end === null || end.type !== 'end') {
      // The reader's own part failed mid-stream: its error line ends the stream, as on one server.
      if (held !== null) yield `${held}\n`;
      return;
    }
    const head = end as EndLine;
    let tail: Response;
    try {
      tail = await live.get(req, withParams(req.url, { after: head.next }));
      if (tail.status !== 200) throw live.failed(`answered ${tail.status} to the rest of a replay: ${(await tail.text()).slice(0, 200)}`);
    } catch (e) {
      yield `${errorLine(e as PmtapeError, String(req.id))}\n`;
      return;
    }
    let last: string | null = null;
    try {
      for await (const line of linesOf(tail)) {
        if (last !== null) yield `${last}\n`;
        last = line;
      }
    } catch (e) {
      yield `${errorLine(live.failed(`broke off the rest of a replay (${(e as Error).message})`), String(req.id))}\n`;
      return;
    }
    const closing = last === null ? null : (JSON.parse(last) as EndLine | { type: string });
    if (closing === null) {
      yield `${errorLine(live.failed('ended the rest of a replay without an end line'), String(req.id))}\n`;
      return;
    }
    if (closing.type !== 'end') {
      yield `${last}\n`;
      return;
    }
    const c = closing as EndLine;
    const out: EndLine = { type: 'end', next: c.next };
    if (c.markets !== undefined || head.markets !== undefined) out.markets = mergeMarkets(head.markets, c.markets);
    yield `${JSON.stringify(out)}\n`;
  }
  return { stream: Readable.from(lines()) };
}
