// `pmtape/client`: a typed client of the pmtape HTTP API for backtests and research scripts. Paged
// routes are async iterators that follow `next_cursor`; `replay` streams `/v3/replay` and resumes
// after the last line it yielded when the connection drops; `stream` is the live WebSocket.

import { ndjson, PmtapeError, queryString, sleep, Transport, type QueryValue, type TransportOptions } from './http.js';
import { LiveStream, type StreamOptions } from './stream.js';
import { FAMILY_PATHS, type Family, type MarketRef } from './families.js';

export { PmtapeError } from './http.js';
export { LiveStream, type StreamOptions } from './stream.js';
export type { Family, MarketRef } from './families.js';

/** A time: a Date, epoch milliseconds, or ISO 8601 UTC text. */
export type TimeLike = Date | number | string;
/** A JSON body as the server sent it: fields are `any`, so callers read them without a cast. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the public body type, see above
export type Json = Record<string, any>;

export interface ClientOptions extends TransportOptions {
  /** How many times `replay` reconnects after a dropped connection without progress (default 5). */
  readonly maxResumes?: number;
}

export interface SnapshotsParams extends MarketRef {
  readonly startTime?: TimeLike;
  readonly endTime?: TimeLike;
  readonly includeOrderbook?: boolean;
  readonly interval?: 'raw' | '1s' | '1m' | '5m' | '1h';
  readonly depth?: number;
  readonly outcome?: string;
  readonly order?: 'asc' | 'desc';
  readonly limit?: number;
}

export interface ReplayParams {
  readonly family: Family;
  readonly marketIds?: readonly string[];
  readonly ticker?: string | readonly string[];
  readonly coin?: string;
  readonly window?: string;
  readonly startTime: TimeLike;
  readonly endTime?: TimeLike;
  /** Default `['book']`. */
  readonly types?: readonly string[];
  readonly depth?: number;
  /** Continue after this token (a previous replay's `next`). */
  readonly after?: string;
}

/** One `/v3/replay` line. */
export interface ReplayLine {
  readonly type: string;
  readonly family: Family;
  readonly market_id?: string;
  readonly ticker?: string;
  readonly seq: number;
  readonly receive_time: string;
  readonly source_time: string | null;
  readonly data: Json;
}

const time = (t: TimeLike | undefined): string | number | undefined => (t instanceof Date ? t.toISOString() : t);
const enc = encodeURIComponent;

/** The resume token of a replay line: its position, as the server defines it. */
export function replayToken(line: ReplayLine): string {
  const market = line.market_id ?? line.ticker ?? '';
  return Buffer.from(JSON.stringify([Date.parse(line.receive_time), market, line.seq, line.type])).toString('base64url');
}

/** The lines of a replay; after the loop, `next` holds the token that continues it. */
export class ReplayStream implements AsyncIterable<ReplayLine> {
  /** The token after the last line yielded (the end line's `next` once the replay is complete). */
  next: string | null;
  constructor(
    private readonly run: (self: ReplayStream) => AsyncGenerator<ReplayLine>,
    after: string | null,
  ) {
    this.next = after;
  }
  [Symbol.asyncIterator](): AsyncIterator<ReplayLine> {
    return this.run(this);
  }
}

export class Client {
  private readonly http: Transport;
  constructor(private readonly opts: ClientOptions) {
    this.http = new Transport(opts);
  }

  /** Every item of a list route, page after page. */
  private async *paged(path: string, params: Record<string, QueryValue>): AsyncGenerator<Json> {
    let cursor: string | undefined;
    do {
      const page = await this.http.json<{ data: Json[]; next_cursor: string | null }>(path + queryString({ ...params, cursor }));
      yield* page.data;
      cursor = page.next_cursor ?? undefined;
    } while (cursor !== undefined);
  }

  private marketPath(ref: MarketRef, tail: string): string {
    return `${FAMILY_PATHS[ref.family].marketPath(ref)}/${tail}`;
  }

  /** Markets of a family: `coin` (required for the coin family), `window`, `status`, `series`, times. */
  markets(p: {
    family: Family;
    coin?: string;
    window?: string;
    status?: string;
    series?: string;
    startTime?: TimeLike;
    endTime?: TimeLike;
    limit?: number;
  }): AsyncIterable<Json> {
    const f = FAMILY_PATHS[p.family];
    const q = {
      window: p.window,
      status: p.status,
      series: p.series,
      start_time: time(p.startTime),
      end_time: time(p.endTime),
      limit: p.limit ?? 1000,
    };
    return this.paged(f.marketsPath(p.coin), f.coinFilter ? { ...q, coin: p.coin } : q);
  }

  snapshots(p: SnapshotsParams): AsyncIterable<Json> {
    return this.paged(this.marketPath(p, 'snapshots'), {
      start_time: time(p.startTime),
      end_time: time(p.endTime),
      include_orderbook: p.includeOrderbook,
      interval: p.interval,
      depth: p.depth,
      outcome: p.outcome,
      order: p.order,
      limit: p.limit ?? 1000,
    });
  }

  /** Wallet-prediction samples of one metric (`chance`, `price`, `last_trade`). */
  timeseries(p: {
    marketId: string;
    metric: 'chance' | 'price' | 'last_trade';
    outcome?: string;
    startTime?: TimeLike;
    endTime?: TimeLike;
    limit?: number;
  }): AsyncIterable<Json> {
    return this.paged(`/v3/wallet-prediction/${enc(p.marketId)}/timeseries`, {
      metric: p.metric,
      outcome: p.outcome,
      start_time: time(p.startTime),
      end_time: time(p.endTime),
      limit: p.limit ?? 1000,
    });
  }

  /** Coverage of every market (or of one, with marketId/ticker: a single item). */
  async *coverage(
    p: { family?: Family; marketId?: string; ticker?: string; startTime?: TimeLike; endTime?: TimeLike } = {},
  ): AsyncGenerator<Json> {
    const q = { family: p.family, market_id: p.marketId, ticker: p.ticker, start_time: time(p.startTime), end_time: time(p.endTime) };
    if (p.marketId !== undefined || p.ticker !== undefined) {
      yield (await this.http.json<{ data: Json }>(`/v3/coverage${queryString(q)}`)).data;
      return;
    }
    yield* this.paged('/v3/coverage', { ...q, limit: 1000 });
  }

  /** Parquet files: `{path, rows, bytes, sha256, min_time, max_time}`; download with `datasetUrl(path)`. */
  datasets(p: { family?: Family; startDate?: string; endDate?: string } = {}): AsyncIterable<Json> {
    return this.paged('/v3/datasets', { family: p.family, start_date: p.startDate, end_date: p.endDate, limit: 1000 });
  }

  /**
   * One market's rows of a dataset (`book_changes`, `trades`, `gaps`, `metrics`, `catalog`) with
   * receive time in [startTime, endTime), as the bytes of one Arrow IPC stream with the dataset's
   * columns: `tableFromIPC(bytes)` (apache-arrow), `pl.readIPCStream(Buffer.from(bytes))`. A body cut
   * off mid-stream (no end marker) throws rather than being returned short.
   */
  async datasetRows(p: {
    family: Family;
    dataset: 'book_changes' | 'trades' | 'gaps' | 'metrics' | 'catalog';
    marketId?: string;
    ticker?: string;
    startTime: TimeLike;
    endTime: TimeLike;
  }): Promise<Uint8Array> {
    const q = queryString({
      family: p.family,
      dataset: p.dataset,
      market_id: p.marketId,
      ticker: p.ticker,
      start_time: time(p.startTime),
      end_time: time(p.endTime),
    });
    const res = await this.http.get(`/v3/datasets/rows${q}`);
    let bytes: Uint8Array;
    try {
      bytes = new Uint8Array(await res.arrayBuffer());
    } catch (e) {
      throw new Error(`/v3/datasets/rows: the stream was cut off (${(e as Error).message}); ask again`);
    }
    const end = bytes.subarray(bytes.length - 8);
    if (bytes.length < 8 || end.some((b, i) => b !== (i < 4 ? 0xff : 0)))
      throw new Error('/v3/datasets/rows: the stream was cut off (no end-of-stream marker); ask again');
    return bytes;
  }

  datasetUrl(path: string): string {
    return `${this.http.baseUrl}/v3/datasets/files/${path.split('/').map(enc).join('/')}`;
  }

  /** The newest book (with `stale`), or the book as of `asOf`. */
  async latest(p: MarketRef & { depth?: number; asOf?: TimeLike; outcome?: string; clock?: 'receive' | 'source' }): Promise<Json> {
    const q = queryString({ depth: p.depth, as_of: time(p.asOf), outcome: p.outcome, clock: p.clock });
    return (await this.http.json<{ data: Json }>(this.marketPath(p, 'orderbook/latest') + q)).data;
  }

  /**
   * `/v3/replay` as an async iterator of lines. A dropped connection (or a cut-off body) is resumed
   * after the last line yielded; a server error line or envelope is thrown as PmtapeError.
   */
  replay(p: ReplayParams): ReplayStream {
    const tickers = typeof p.ticker === 'string' ? [p.ticker] : p.ticker;
    const base = {
      family: p.family,
      market_id: p.marketIds,
      ticker: tickers,
      coin: p.coin,
      window: p.window,
      start_time: time(p.startTime),
      end_time: time(p.endTime),
      types: p.types ?? ['book'],
      depth: p.depth,
    };
    const maxResumes = this.opts.maxResumes ?? 5;
    const http = this.http;
    return new ReplayStream(async function* (self) {
      let failures = 0;
      for (;;) {
        let res: Response;
        try {
          res = await http.get(`/v3/replay${queryString({ ...base, after: self.next ?? undefined })}`);
        } catch (e) {
          if (e instanceof PmtapeError || ++failures > maxResumes) throw e;
          await sleep(200 * 2 ** failures);
          continue;
        }
        let progressed = false;
        try {
          for await (const obj of ndjson(res)) {
            if (obj.type === 'end') {
              self.next = obj.next as string;
              return;
            }
            if (obj.type === 'error') {
              const e = obj.error as { status: number; code: string; message: string; request_id: string };
              throw new PmtapeError(e.status, e.code, e.message, e.request_id);
            }
            const line = obj as unknown as ReplayLine;
            self.next = replayToken(line);
            progressed = true;
            failures = 0;
            yield line;
          }
        } catch (e) {
          if (e instanceof PmtapeError || e instanceof SyntaxError) throw e;
        }
        // The body ended without an end line (or the socket failed): continue after the last line,
        // unless attempt after attempt brings nothing new.
        if (!progressed && ++failures > maxResumes)
          throw new PmtapeError(0, 'stream_incomplete', `the replay stopped ${failures} times without a new line`, null);
        await sleep(Math.min(100 * 2 ** failures, 5000));
      }
    }, p.after ?? null);
  }

  /** The live book stream of one market over the WebSocket (`from` replays history first). */
  stream(p: MarketRef & StreamOptions): LiveStream {
    return new LiveStream(this.http.baseUrl, this.http.apiKey, p);
  }
}
