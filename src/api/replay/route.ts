// `GET /v3/replay` (API.md §8): many markets of one family as one NDJSON stream in receive-time
// order, merged from one cursor per market log and paced by the socket (a paused client stops the
// reads). Everything that can fail on input fails before the first byte, with the usual envelope;
// a storage failure later ends the stream with an `error` line. The last line carries a resume token.

import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type, type Static } from 'typebox';
import { invalidParameter, PmtapeError } from '../../errors.js';
import { DESCRIPTORS, familyOf, type FamilyDescriptor } from '../../families/registry.js';
import type { Market } from '../../schema/market.js';
import { FAMILIES } from '../../schema/observation.js';
import { timeParam } from '../query/params.js';
import { checkScope, resolveMarketId } from '../query/resolve-market.js';
import { socketWriter } from '../query/socket-writer.js';
import { replayMarket, type ReplayMarket } from '../../book/replay-book.js';
import { recordedSpan } from './cursor.js';
import { bookLines, metricLines, type ReplayLine, type SourceRequest } from './lines.js';
import { mergeSorted } from './merge.js';
import { compareKeys, decodeToken, encodeToken, parseTypes, type LineKey } from './plan.js';
import { candleLines } from './candles.js';
import { marketOutcome } from '../../schema/market-outcome.js';
import { toIso } from '../../schema/time.js';
import { CANDLE_DATASET_INTERVAL_MS } from '../../storage/index.js';
import { envelope } from '../plugins/error-handler.js';
import { errorResponses, oneOf, queryParam, typedQuery } from '../route-params.js';

/** Most markets one replay merges (each holds a cursor, and a file handle while it reads). */
export const MAX_REPLAY_MARKETS = 300;
/** Lines are written in batches of about this many bytes (fewer syscalls, same pacing). */
const BATCH_BYTES = 64 * 1024;

/** Families whose recorders sample metrics (`types=metric`). */
const METRIC_FAMILIES = DESCRIPTORS.filter((d) => d.replay.metrics).map((d) => d.family);

const idList = (description: string) => Type.Optional(Type.String({ minLength: 1, maxLength: 8192, description }));

const querySchema = typedQuery({
  family: oneOf(FAMILIES, { description: 'which family the markets belong to' }),
  market_id: idList('comma list of market ids, condition ids or slugs (coin, wallet-prediction)'),
  ticker: idList('comma list of tickers (yesno-exchange)'),
  coin: Type.Optional(
    Type.Unsafe<string>({
      ...queryParam.coin,
      description: 'instead of ids: every market of this coin whose recorded books overlap the range',
    }),
  ),
  window: Type.Optional(Type.Unsafe<string>({ ...queryParam.window, description: 'with coin: only markets of this window (5m, 15m...)' })),
  start_time: Type.String({ ...queryParam.start_time, description: 'inclusive; required' }),
  end_time: Type.Optional(Type.String({ ...queryParam.end_time, description: 'exclusive; default one second before now' })),
  types: Type.Optional(
    Type.String({
      maxLength: 400,
      default: 'book',
      description:
        'comma list: book, book_change, book_snapshot_<depth>_<interval> (e.g. book_snapshot_25_1s), trade, gap, metric, candle_1m',
    }),
  ),
  depth: Type.Optional(queryParam.depth),
  after: Type.Optional(
    Type.String({ maxLength: 1024, description: 'resume token: the next of an end line, or the position of the last line read' }),
  ),
});
type ReplayQuery = Static<typeof querySchema>;

const DESCRIPTION = [
  'Streams application/x-ndjson: one {"type","family","market_id"|"ticker","seq","receive_time","source_time","data"} per line,',
  'in receive-time order across markets (ties: market, then seq, then type), gaps inline; the last line is',
  '{"type":"end","next":"<token>","markets":[{"market_id","status","resolution","winning_outcome","resolved_time"}]} (or {"type":"error","error":{...}} when reading fails mid-stream). after=<token>',
  'continues exactly after the line the token names. wallet-prediction needs the paid plan. Counts as one request.',
].join(' ');

function splitIds(text: string, name: string): string[] {
  const ids = [
    ...new Set(
      text
        .split(',')
        .map((s) => s.trim())
        .filter((s) => s !== ''),
    ),
  ];
  if (ids.length === 0) throw invalidParameter(name, 'must name at least one market');
  if (ids.length > MAX_REPLAY_MARKETS) throw invalidParameter(name, `names more than ${MAX_REPLAY_MARKETS} markets; split the replay`);
  for (const id of ids) if (id.length > 200) throw invalidParameter(name, 'has an id longer than 200 characters');
  return ids;
}

/** The markets a request names (ids or a coin selector), each once, sorted by id. */
async function resolveMarkets(
  app: FastifyInstance,
  d: FamilyDescriptor,
  qs: ReplayQuery,
  start: number,
  end: number,
): Promise<ReplayMarket[]> {
  const { markets } = app.pmtape;
  const { family, replay } = d;
  const given = (['market_id', 'ticker', 'coin'] as const).filter((k) => qs[k] !== undefined);
  if (given.length !== 1)
    throw invalidParameter(
      given.length === 0 ? replay.idParam : given[1],
      `must be given alone: name the markets with ${replay.idParam}${replay.byCoin ? ' or select them with coin' : ''}`,
    );
  if (qs.window !== undefined && qs.coin === undefined) throw invalidParameter('window', 'only applies with coin');
  const out = new Map<string, ReplayMarket>();
  const add = (id: string, market: Market | null): void => void out.set(id, replayMarket(d, id, market));
  if (qs.coin === undefined) {
    if (qs.ticker !== undefined && replay.idParam !== 'ticker')
      throw invalidParameter('ticker', `does not apply to ${family}; name its markets with market_id`);
    const param = qs.ticker !== undefined ? 'ticker' : 'market_id';
    for (const id of splitIds((qs.ticker ?? qs.market_id)!, param)) {
      const m = await resolveMarketId(app, d, id);
      add(m.id, m.market);
    }
  } else {
    if (!replay.byCoin) throw invalidParameter('coin', `does not apply to ${family}; name its markets with ${replay.idParam}`);
    const coin = qs.coin;
    await checkScope(app, d, coin);
    const all = (await markets.list(family)).map((e) => e.market);
    for (const m of all) {
      if (!d.keep(m, { coin, window: qs.window })) continue;
      const span = await recordedSpan(await markets.reader(family, 'books', m.market_id));
      if (!span || span.first >= end || span.last < start) continue;
      if (out.size === MAX_REPLAY_MARKETS)
        throw invalidParameter(
          'coin',
          `selects more than ${MAX_REPLAY_MARKETS} markets in this range; narrow start_time/end_time or add window`,
        );
      add(m.market_id, m);
    }
  }
  return [...out.values()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

/**
 * Lines encoded as UTF-8 into one buffer until a batch is full. Writing a buffer spares the HTTP
 * layer a scan of a long string for its byte length (chunked encoding needs it) before encoding it.
 */
class LineBuffer {
  private buf = Buffer.allocUnsafe(2 * BATCH_BYTES);
  private used = 0;

  /** Appends `text` and a newline; true once the batch is full. */
  add(text: string): boolean {
    const room = text.length * 3 + 1; // UTF-8 needs at most 3 bytes per UTF-16 unit
    if (this.buf.length - this.used < room) {
      const bigger = Buffer.allocUnsafe(Math.max(2 * this.buf.length, this.used + room));
      this.buf.copy(bigger, 0, 0, this.used);
      this.buf = bigger;
    }
    this.used += this.buf.write(text, this.used);
    this.buf[this.used++] = 10;
    return this.used >= BATCH_BYTES;
  }

  /** The batch so far; the next starts in a fresh buffer (the socket may hold this one a while). */
  take(): Buffer {
    const out = this.buf.subarray(0, this.used);
    this.buf = Buffer.allocUnsafe(2 * BATCH_BYTES);
    this.used = 0;
    return out;
  }
}

export default async function replayRoutes(app: FastifyInstance): Promise<void> {
  app.withTypeProvider<TypeBoxTypeProvider>().get(
    '/replay',
    {
      config: { plan: 'free', expensive: true },
      schema: {
        description: DESCRIPTION,
        querystring: querySchema,
        response: {
          200: {
            description: 'application/x-ndjson lines, the last an end (or error) line',
            content: { 'application/x-ndjson': { schema: { type: 'string' } } },
          },
          ...errorResponses([400, 401, 403, 404, 429]),
        },
      },
    },
    async (req, reply) => {
      const qs = req.query;
      const { family } = qs;
      const d = familyOf(family);
      if (d.plan === 'paid' && req.apiKey?.plan !== 'paid') {
        throw new PmtapeError(
          'plan_required',
          `Replays of ${family} need the paid plan; the key "${req.apiKey?.name ?? ''}" is on the ${req.apiKey?.plan ?? 'free'} plan.`,
        );
      }
      const now = Date.now();
      const start = timeParam(qs, 'start_time')!;
      // Without end_time the replay stops a second ago: a record still being appended (fsync is
      // group-committed) is then never behind a token, so resuming with `next` cannot skip it.
      const givenEnd = timeParam(qs, 'end_time');
      if (givenEnd !== undefined && start >= givenEnd) throw invalidParameter('start_time', 'must be before end_time');
      const end = givenEnd ?? Math.max(start, now - 1000);
      const { maxDepth } = d.replay;
      const { depth } = qs;
      if (depth !== undefined && depth > maxDepth) throw invalidParameter('depth', `must be at most ${maxDepth} for ${family}`);
      const types = parseTypes(qs.types, { name: family, maxDepth, metricFamilies: METRIC_FAMILIES });
      const after: LineKey | null = qs.after === undefined ? null : decodeToken(qs.after);
      const markets = await resolveMarkets(app, d, qs, start, end);

      // A resumed replay warms up from the bucket start before its token (every interval divides the
      // largest), so its interval samples are decided exactly as in the first run.
      const widest = Math.max(0, ...types.snapshots.map((s) => s.intervalMs));
      const from = after === null ? start : Math.max(start, widest > 0 ? Math.floor(after.t / widest) * widest : after.t);
      const sources: AsyncIterable<readonly ReplayLine[]>[] = [];
      for (const m of markets) {
        const base = { market: m, types, depth, start, from, end, after };
        if (types.book || types.bookChange || types.trade || types.gap || types.snapshots.length > 0) {
          const reader = await app.pmtape.markets.reader(family, 'books', m.id);
          if (types.snapshots.length === 0) {
            // Only interval snapshots use the recorded span (no bucket before the first capture nor
            // after the last): without them its two reads (the first and the newest record, on a
            // compacted day two more chunks to decode) are skipped, and a market with no records
            // simply makes no lines.
            sources.push(bookLines({ ...base, reader, sampleStop: start, firstRecv: start } satisfies SourceRequest));
          } else {
            const span = await recordedSpan(reader);
            if (span) {
              const connected = await app.pmtape.status.isConnected(family, m.id);
              const sampleStop = Math.min(end, now - 1000, connected ? now : Math.floor(span.last) + 1);
              sources.push(bookLines({ ...base, reader, sampleStop, firstRecv: span.first } satisfies SourceRequest));
            }
          }
        }
        if (types.candle) {
          const reader = await app.pmtape.markets.reader(family, 'books', m.id);
          const span = await recordedSpan(reader);
          if (span) {
            // Minutes that have ended, not after now; a market not being recorded ends with the minute of
            // its last record (that minute's candle is as complete as it will be; its gap seconds say so).
            const connected = await app.pmtape.status.isConnected(family, m.id);
            const stop = Math.min(
              end,
              now - 1000,
              connected ? now : Math.ceil((Math.floor(span.last) + 1) / CANDLE_DATASET_INTERVAL_MS) * CANDLE_DATASET_INTERVAL_MS,
            );
            sources.push(candleLines({ market: m, reader, start, stop, after }));
          }
        }
        if (types.metric) {
          const reader = await app.pmtape.markets.reader(family, 'metrics', m.id);
          sources.push(metricLines({ ...base, reader, sampleStop: start, firstRecv: start }));
        }
      }

      const out = socketWriter(reply);
      let started = false;
      const begin = (): void => {
        started = true;
        reply.hijack();
        const headers: Record<string, string | number | string[]> = {};
        for (const [k, v] of Object.entries(reply.getHeaders())) if (v !== undefined) headers[k] = v;
        reply.raw.writeHead(200, { ...headers, 'content-type': 'application/x-ndjson; charset=utf-8', 'cache-control': 'no-store' });
      };
      let last: LineKey | null = after;
      const batch = new LineBuffer();
      // Each line is encoded as the merge hands it over (never held in a list), and written with the
      // ones before it once the batch is full; the write's promise paces the merge.
      const sink = (line: ReplayLine): boolean | Promise<boolean> => {
        if (!started) begin(); // the first line is there: from now on failures are error lines
        last = line;
        if (!batch.add(line.text)) return true;
        return out.write(batch.take()); // false once the client left: the merge closes every cursor
      };
      try {
        if (!(await mergeSorted(sources, compareKeys, sink))) return;
        if (!started) begin();
        // Each market's lifecycle and result beside its data: what a backtest settles against.
        const outcomes = markets.map((m) => {
          const o = marketOutcome(m.market);
          return { [m.idField]: m.id, ...o, resolved_time: o.resolved_time === null ? null : toIso(o.resolved_time) };
        });
        batch.add(
          JSON.stringify({ type: 'end', next: encodeToken(last ?? { t: start - 1, market: '', seq: -1, type: '' }), markets: outcomes }),
        );
        await out.write(batch.take());
      } catch (err) {
        if (!started) throw err; // a failure before the first line is answered with the envelope
        app.pmtape.log.error({ err, request_id: req.id }, 'replay failed mid-stream');
        const e = envelope(
          'internal',
          `Reading the recorded data failed; resume with the last line's position. Quote request_id ${req.id} when reporting it.`,
          String(req.id),
        );
        batch.add(JSON.stringify({ type: 'error', error: e.error }));
        await out.write(batch.take());
      } finally {
        if (started && !out.gone()) reply.raw.end();
      }
    },
  );
}
