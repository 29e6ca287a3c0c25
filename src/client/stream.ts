// The live book stream of the pmtape client (`/v3/stream`, a WebSocket): subscribes to one market
// and yields the server's `book` and `gap` messages as an async iterator; a server `error` message
// (or a refused upgrade) is thrown as PmtapeError. Messages wait in a queue until the loop takes them.

import WebSocket from 'ws';
import { PmtapeError } from './http.js';
import { FAMILY_PATHS, type MarketRef } from './families.js';

export interface StreamOptions {
  /** Start from this time (Date, epoch ms or ISO) or a snapshots `next_cursor`: history first, then live. */
  readonly from?: Date | number | string;
  /** ...or continue after this seq. */
  readonly afterSeq?: number;
  /** Wallet-prediction: which outcome's view (default the first). */
  readonly outcome?: string;
}

// The messages are the server's JSON, handed to the caller as they are: `any` values, as the rest of
// the client's bodies (`Json`), so a loop reads their fields without a cast.
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the public message type, see above
type Msg = Record<string, any>;
/** The server's error envelope: a stream `error` message's `error`, or a refused upgrade's body. */
interface ErrorBody {
  status?: number;
  code?: string;
  message?: string;
  request_id?: string | null;
}

export class LiveStream implements AsyncIterable<Msg> {
  private readonly ws: WebSocket;
  private readonly queue: Msg[] = [];
  private wake: (() => void) | null = null;
  private failure: Error | null = null;
  private ended = false;

  constructor(baseUrl: string, apiKey: string | undefined, p: MarketRef & StreamOptions) {
    const url = `${baseUrl.replace(/^http/, 'ws')}/v3/stream`;
    this.ws = new WebSocket(url, { headers: apiKey ? { authorization: `Bearer ${apiKey}` } : {} });
    const sub: Msg = { op: 'subscribe', id: 1, channel: 'book', family: p.family };
    Object.assign(sub, FAMILY_PATHS[p.family].subscription(p));
    if (p.outcome !== undefined) sub.outcome = p.outcome;
    if (p.from !== undefined) sub.from = p.from instanceof Date ? p.from.toISOString() : p.from;
    if (p.afterSeq !== undefined) sub.after_seq = p.afterSeq;
    this.ws.on('open', () => this.ws.send(JSON.stringify(sub)));
    this.ws.on('message', (d) => {
      const m = JSON.parse((d as Buffer).toString()) as Msg; // ws's default binaryType delivers one Buffer
      const e = m.error as ErrorBody | undefined;
      if (m.type === 'error') this.fail(new PmtapeError(e?.status ?? 0, e?.code ?? 'error', e?.message ?? '', e?.request_id ?? null));
      else if (m.type !== 'subscribed') this.push(m);
    });
    this.ws.on('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => {
        let e: ErrorBody = {};
        try {
          e = (JSON.parse(body) as { error?: ErrorBody }).error ?? {};
        } catch {
          // not an envelope
        }
        this.fail(
          new PmtapeError(
            res.statusCode ?? 0,
            e.code ?? 'http_error',
            e.message ?? `upgrade refused with ${res.statusCode}`,
            e.request_id ?? null,
          ),
        );
      });
    });
    this.ws.on('error', (err) => this.fail(new PmtapeError(0, 'connection_failed', err.message, null)));
    this.ws.on('close', () => {
      this.ended = true;
      this.notify();
    });
  }

  private notify(): void {
    const w = this.wake;
    this.wake = null;
    w?.();
  }

  private push(m: Msg): void {
    this.queue.push(m);
    this.notify();
  }

  private fail(e: Error): void {
    this.failure ??= e;
    this.ws.terminate();
    this.notify();
  }

  /** Closes the connection; the iterator ends after the messages already received. */
  close(): void {
    this.ws.close();
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<Msg> {
    try {
      for (;;) {
        const m = this.queue.shift();
        if (m !== undefined) {
          yield m;
          continue;
        }
        if (this.failure) throw this.failure;
        if (this.ended) return;
        await new Promise<void>((r) => (this.wake = r));
      }
    } finally {
      this.ws.terminate();
    }
  }
}
