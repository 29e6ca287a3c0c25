// `GET /v3/replay` (API.md §8): many markets of one family as one NDJSON stream in receive-time
// order, merged from one cursor per market log and paced by the socket (a paused client stops the
// reads). Everything that can fail on input fails before the first byte, with the usual envelope;
// a storage failure later ends the stream with an `error` line. The last line carries a resume token.

import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { invalidParameter, notFound, PmtapeError } from '../../errors.js';
import type { CoinMarket, WalletMarket } from '../../schema/market.js';
import { FAMILIES, type Family } from '../../schema/observation.js';
import { timeParam, type Query } from '../query/params.js';
import type { ReplayMarket } from '../query/replay-book.js';
import { recordedSpan } from '../query/replay-cursor.js';
import { bookLines, metricLines, type ReplayLine, type SourceRequest } from '../query/replay-lines.js';
import { mergeSorted } from '../query/replay-merge.js';
import { compareKeys, decodeToken, encodeToken, parseTypes, type LineKey } from '../query/replay-plan.js';
import { YESNO_MAX_DEPTH } from '../query/shapes.js';
import { envelope } from '../plugins/error-handler.js';
import { q, query } from '../schemas.js';

/** Most markets one replay merges (each holds a cursor, and a file handle while it reads). */
export const MAX_REPLAY_MARKETS = 300;
/** Lines are written in batches of about this many characters (fewer syscalls, same pacing). */
const BATCH_CHARS = 64 * 1024;

const idList = { type: 'string', minLength: 1, maxLength: 8192 } as const;

const querySchema = query({
  family: { type: 'string', enum: [...FAMILIES], description: 'which family the markets belong to' },
  market_id: { ...idList, description: 'comma list of market ids, condition ids or slugs (coin, wallet-prediction)' },
  ticker: { ...idList, description: 'comma list of tickers (yesno-exchange)' },
  coin: { ...q.coin, description: 'instead of ids: every market of this coin whose recorded books overlap the range' },
  window: { ...q.window, description: 'with coin: only markets of this window (5m, 15m...)' },
  start_time: { ...q.start_time, description: 'inclusive; required' },
  end_time: { ...q.end_time, description: 'exclusive; default one second before now' },
  types: { type: 'string', maxLength: 400, default: 'book', description: 'comma list: book, book_change, book_snapshot_<depth>_<interval> (e.g. book_snapshot_25_1s), trade, gap, metric' },
  depth: q.depth,
  after: { type: 'string', maxLength: 1024, description: 'resume token: the next of an end line, or the position of the last line read' },
}, ['family', 'start_time']);

const DESCRIPTION = [
  'Streams application/x-ndjson: one {"type","family","market_id"|"ticker","seq","receive_time","source_time","data"} per line,',
  'in receive-time order across markets (ties: market, then seq, then type), gaps inline; the last line is',
  '{"type":"end","next":"<token>"} (or {"type":"error","error":{...}} when reading fails mid-stream). after=<token>',
  'continues exactly after the line the token names. wallet-prediction needs the paid plan. Counts as one request.',
].join(' ');

function splitIds(text: string, name: string): string[] {
  const ids = [...new Set(text.split(',').map((s) => s.trim()).filter((s) => s !== ''))];
  if (ids.length === 0) throw invalidParameter(name, 'must name at least one market');
  if (ids.length > MAX_REPLAY_MARKETS) throw invalidParameter(name, `names more than ${MAX_REPLAY_MARKETS} markets; split the replay`);
  for (const id of ids) if (id.length > 200) throw invalidParameter(name, 'has an id longer than 200 characters');
  return ids;
}

/** The markets a request names (ids or a coin selector), each once, sorted by id. */
async function resolveMarkets(app: FastifyInstance, family: Family, qs: Query, start: number, end: number): Promise<ReplayMarket[]> {
  const { markets } = app.pmtape;
  const given = ['market_id', 'ticker', 'coin'].filter((k) => qs[k] !== undefined);
  if (given.length !== 1) throw invalidParameter(given.length === 0 ? 'market_id' : given[1], 'must be given alone: name the markets with market_id (yes/no: ticker) or select them with coin');
  if (qs.window !== undefined && qs.coin === undefined) throw invalidParameter('window', 'only applies with coin');
  const out = new Map<string, ReplayMarket>();
  if (family === 'yesno-exchange') {
    if (qs.coin !== undefined) throw invalidParameter('coin', 'does not apply to yesno-exchange; name tickers with ticker');
    for (const id of splitIds((qs.ticker ?? qs.market_id) as string, qs.ticker !== undefined ? 'ticker' : 'market_id')) {
      const m = await markets.resolve(family, id);
      const ticker = m ? m.market.market_id : (await markets.hasBooks(family, id)) ? id : null;
      if (ticker === null) throw notFound(`Unknown ticker '${id.slice(0, 200)}'; list recorded tickers at /v3/yesno-exchange/markets.`);
      out.set(ticker, { family, id: ticker, market: null });
    }
  } else if (qs.coin === undefined) {
    if (qs.ticker !== undefined) throw invalidParameter('ticker', `applies to yesno-exchange only; use market_id for ${family}`);
    for (const id of splitIds(qs.market_id as string, 'market_id')) {
      const m = await markets.resolve(family, id);
      if (!m) throw notFound(`Unknown market '${id.slice(0, 200)}'; list known markets at /v3/${family === 'coin' ? '{coin}/markets' : 'wallet-prediction/markets'}.`);
      out.set(m.market.market_id, { family, id: m.market.market_id, market: m.market as CoinMarket | WalletMarket });
    }
  } else {
    const coin = qs.coin as string;
    const all = (await markets.list(family)).map((e) => e.market as CoinMarket | WalletMarket);
    if (!all.some((m) => m.coin === coin) && !app.pmtape.config.coins.includes(coin)) {
      throw notFound(`Unknown coin '${coin}'; recorded coins: ${app.pmtape.config.coins.join(', ')}.`);
    }
    for (const m of all) {
      if (m.coin !== coin || (qs.window !== undefined && m.window !== qs.window)) continue;
      const span = await recordedSpan(await markets.reader(family, 'books', m.market_id));
      if (!span || span.first >= end || span.last < start) continue;
      if (out.size === MAX_REPLAY_MARKETS) throw invalidParameter('coin', `selects more than ${MAX_REPLAY_MARKETS} markets in this range; narrow start_time/end_time or add window`);
      out.set(m.market_id, { family, id: m.market_id, market: m });
    }
  }
  return [...out.values()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

/** Writes to the raw response, waiting for `drain` when the socket is full; false once the client is gone. */
function socketWriter(reply: FastifyReply): { write(text: string): Promise<boolean>; gone(): boolean } {
  const raw = reply.raw;
  let closed = false;
  raw.on('close', () => (closed = true));
  return {
    gone: () => closed || raw.destroyed,
    write: (text) => {
      if (closed || raw.destroyed) return Promise.resolve(false);
      if (raw.write(text)) return Promise.resolve(true);
      return new Promise((resolve) => {
        const done = (): void => {
          raw.off('drain', done);
          raw.off('close', done);
          resolve(!closed && !raw.destroyed);
        };
        raw.on('drain', done);
        raw.on('close', done);
      });
    },
  };
}

export default async function replayRoutes(app: FastifyInstance): Promise<void> {
  app.get('/replay', {
    config: { plan: 'free' },
    schema: {
      description: DESCRIPTION,
      querystring: querySchema,
      response: { 200: { description: 'application/x-ndjson lines, the last an end (or error) line', type: 'string' } },
    },
  }, async (req: FastifyRequest, reply: FastifyReply) => {
    const qs = req.query as Query;
    const family = qs.family as Family;
    if (family === 'wallet-prediction' && req.apiKey?.plan !== 'paid') {
      throw new PmtapeError('plan_required', `Replays of wallet-prediction need the paid plan; the key "${req.apiKey?.name ?? ''}" is on the ${req.apiKey?.plan ?? 'free'} plan.`);
    }
    const now = Date.now();
    const start = timeParam(qs, 'start_time')!;
    // Without end_time the replay stops a second ago: a record still being appended (fsync is
    // group-committed) is then never behind a token, so resuming with `next` cannot skip it.
    const givenEnd = timeParam(qs, 'end_time');
    if (givenEnd !== undefined && start >= givenEnd) throw invalidParameter('start_time', 'must be before end_time');
    const end = givenEnd ?? Math.max(start, now - 1000);
    const maxDepth = family === 'yesno-exchange' ? YESNO_MAX_DEPTH : 1000;
    const depth = qs.depth as number | undefined;
    if (depth !== undefined && depth > maxDepth) throw invalidParameter('depth', `must be at most ${maxDepth} for ${family}`);
    const types = parseTypes(qs.types as string | undefined, family, maxDepth);
    const after: LineKey | null = qs.after === undefined ? null : decodeToken(qs.after as string);
    const markets = await resolveMarkets(app, family, qs, start, end);

    // A resumed replay warms up from the bucket start before its token (every interval divides the
    // largest), so its interval samples are decided exactly as in the first run.
    const widest = Math.max(0, ...types.snapshots.map((s) => s.intervalMs));
    const from = after === null ? start : Math.max(start, widest > 0 ? Math.floor(after.t / widest) * widest : after.t);
    const sources: AsyncIterable<ReplayLine>[] = [];
    for (const m of markets) {
      const base = { market: m, types, depth, start, from, end, after };
      if (types.book || types.bookChange || types.trade || types.gap || types.snapshots.length > 0) {
        const reader = await app.pmtape.markets.reader(family, 'books', m.id);
        const span = await recordedSpan(reader);
        if (span) {
          const connected = await app.pmtape.status.isConnected(family, m.id);
          const sampleStop = Math.min(end, now - 1000, connected ? now : Math.floor(span.last) + 1);
          sources.push(bookLines({ ...base, reader, sampleStop, firstRecv: span.first } satisfies SourceRequest));
        }
      }
      if (types.metric) {
        const reader = await app.pmtape.markets.reader(family, 'metrics', m.id);
        sources.push(metricLines({ ...base, reader, sampleStop: start, firstRecv: start }));
      }
    }

    const lines = mergeSorted(sources, compareKeys)[Symbol.asyncIterator]();
    let next = await lines.next(); // a failure before the first line is answered with the envelope
    reply.hijack();
    const headers: Record<string, string | number | string[]> = {};
    for (const [k, v] of Object.entries(reply.getHeaders())) if (v !== undefined) headers[k] = v;
    reply.raw.writeHead(200, { ...headers, 'content-type': 'application/x-ndjson; charset=utf-8', 'cache-control': 'no-store' });
    const out = socketWriter(reply);
    let last: LineKey | null = after;
    let batch = '';
    try {
      for (; !next.done; next = await lines.next()) {
        batch += next.value.text + '\n';
        last = next.value;
        if (batch.length >= BATCH_CHARS) {
          const ok = await out.write(batch);
          batch = '';
          if (!ok) return; // the client left: the finally below closes every cursor
        }
      }
      const token = encodeToken(last ?? { t: start - 1, market: '', seq: -1, type: '' });
      await out.write(batch + JSON.stringify({ type: 'end', next: token }) + '\n');
    } catch (err) {
      req.log.error({ err, request_id: req.id }, 'replay failed mid-stream');
      const e = envelope('internal', `Reading the recorded data failed; resume with the last line's position. Quote request_id ${req.id} when reporting it.`, String(req.id));
      await out.write(batch + JSON.stringify({ type: 'error', error: e.error }) + '\n');
    } finally {
      await lines.return?.(undefined);
      if (!out.gone()) reply.raw.end();
    }
  });
}
