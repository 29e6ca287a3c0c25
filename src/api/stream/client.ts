// One WebSocket client of the live stream: its subscriptions, its bounded outgoing buffer and its
// liveness. Messages are handled one at a time (so "subscribe then unsubscribe" keeps its order);
// live delivery never waits on the socket: past `maxBufferedBytes` the client is closed with 1008.

import { randomUUID } from 'node:crypto';
import type { Socket } from 'node:net';
import type { WebSocket } from 'ws';
import { PmtapeError } from '../../errors.js';
import { streamClients, streamDisconnects } from '../../metrics.js';
import type { Family } from '../../schema/observation.js';
import type { FeedSubscriber, MarketFeed, StreamHub } from './hub.js';
import type { ModelFactory, StreamTarget } from './market.js';
import {
  errorMessage,
  parseClientMessage,
  subscribedMessage,
  unsubscribedMessage,
  type PreparedMessage,
  type StreamRequest,
} from './protocol.js';
import { handover, type StartPoint } from './handover.js';

export interface StreamLimits {
  /** Bytes waiting on one socket beyond which the client is "too far behind" (closed with 1008). */
  readonly maxBufferedBytes: number;
  /** A history replay pauses while more than this is waiting on the socket. */
  readonly replayHighWaterBytes: number;
  /** Subscriptions one connection may hold. */
  readonly maxSubscriptions: number;
  /** How long a client closed for falling behind may take to read the close frame before being cut. */
  readonly closeGraceMs: number;
}

/** What a client needs from the server: the shared hub and the lookups of the read side. */
export interface StreamServices {
  readonly hub: StreamHub;
  readonly modelFor: ModelFactory;
  readonly limits: StreamLimits;
  /** The market a request names, or a not_found PmtapeError. */
  resolveTarget(req: StreamRequest): Promise<StreamTarget>;
  /** The first seq to replay for a snapshots `next_cursor`, or an invalid_cursor PmtapeError. */
  cursorStart(target: StreamTarget, req: StreamRequest, cursor: string): Promise<number>;
  /** A plan_required PmtapeError when the key's plan does not include the family, else null. */
  planCheck(plan: string, family: Family): PmtapeError | null;
  log: { warn(obj: object, msg: string): void; error(obj: object, msg: string): void };
}

interface ClientSub extends FeedSubscriber {
  readonly key: string;
  readonly feed: MarketFeed;
  cancelled: boolean;
}

let nextClientId = 1;

/** Client messages queued behind the one being handled before the client is closed. */
const MAX_PENDING_REQUESTS = 256;

export class StreamClient {
  readonly id = nextClientId++;
  /** Set by the ping sweep, cleared by every pong or message: a peer that stays silent is dropped. */
  alive = true;
  private closed = false;
  private kicked = false;
  private readonly subs = new Map<string, ClientSub>();
  private queue: Promise<void> = Promise.resolve();
  private pending = 0;
  private corked = false;

  constructor(
    readonly ws: WebSocket,
    /** The API key text, re-checked periodically so a revoked key's streams close. */
    readonly apiKey: string,
    readonly plan: string,
    private readonly svc: StreamServices,
  ) {
    streamClients.inc();
    ws.on('pong', () => (this.alive = true));
    ws.on('message', (data, isBinary) => {
      this.alive = true;
      const text = isBinary ? null : (data as Buffer).toString(); // ws's default binaryType delivers one Buffer
      // Requests run one at a time; a client that piles up more than it lets us answer is cut off
      // rather than growing an unbounded backlog.
      if (++this.pending > MAX_PENDING_REQUESTS) {
        this.kick(1008, 'too many requests in flight');
        return;
      }
      this.queue = this.queue
        .then(() => this.handle(text))
        .catch((err: unknown) => {
          const requestId = randomUUID();
          this.svc.log.error({ err, request_id: requestId }, 'stream message handler failed');
          this.send(errorMessage(null, new PmtapeError('internal', 'Internal error.'), requestId));
        })
        .finally(() => this.pending--);
    });
    ws.on('close', () => this.onClose());
    ws.on('error', () => this.onClose());
  }

  /** True once the server started closing this client (its close frame may still be in flight). */
  get closing(): boolean {
    return this.kicked || this.closed;
  }

  get subscriptionCount(): number {
    return this.subs.size;
  }

  /** Live delivery: never blocks; a client whose socket backs up past the limit is closed. */
  send(msg: string | PreparedMessage): void {
    if (this.closed || this.kicked || this.ws.readyState !== this.ws.OPEN) return;
    if (typeof msg === 'string') this.ws.send(msg);
    else {
      // The ready frame goes straight to the socket. Safe to interleave with ws's own sends:
      // without permessage-deflate ws writes every frame synchronously, in call order.
      const socket = (this.ws as unknown as { _socket?: Socket })._socket;
      if (socket && !socket.destroyed) {
        // Everything sent in this turn of the event loop leaves in one writev: when the server
        // falls behind, records arrive in batches and cost one syscall per client per batch.
        if (!this.corked) {
          this.corked = true;
          socket.cork();
          setImmediate(() => {
            this.corked = false;
            socket.uncork();
          });
        }
        socket.write(msg.frame);
      } else this.ws.send(msg.text, { binary: false });
    }
    if (this.ws.bufferedAmount > this.svc.limits.maxBufferedBytes) {
      streamDisconnects.inc({ reason: 'too_far_behind' });
      this.kick(1008, `too far behind: more than ${this.svc.limits.maxBufferedBytes} bytes unread`);
    }
  }

  /** Closes with a code and reason; cut hard if the peer does not finish the close handshake. */
  kick(code: number, reason: string): void {
    if (this.kicked || this.closed) return;
    this.kicked = true;
    this.dropSubscriptions();
    try {
      this.ws.close(code, reason.slice(0, 120));
    } catch {
      this.ws.terminate();
    }
    setTimeout(() => this.ws.terminate(), this.svc.limits.closeGraceMs).unref();
  }

  private sendError(id: number | string | null, err: PmtapeError): void {
    this.send(errorMessage(id, err, randomUUID()));
  }

  private async handle(text: string | null): Promise<void> {
    if (this.closed || this.kicked) return;
    if (text === null) {
      this.sendError(null, new PmtapeError('invalid_parameter', 'Binary frames are not accepted; send JSON text.'));
      return;
    }
    const parsed = parseClientMessage(text);
    if (!parsed.ok) {
      this.sendError(parsed.id, parsed.error);
      return;
    }
    const req = parsed.req;
    try {
      const denied = this.svc.planCheck(this.plan, req.family);
      if (denied) throw denied;
      const target = await this.svc.resolveTarget(req);
      const key = `${target.family}\u0000${target.logMarket}\u0000${req.outcome ?? ''}`;
      if (req.op === 'unsubscribe') {
        const sub = this.subs.get(key);
        if (!sub)
          throw new PmtapeError(
            'not_found',
            `This connection has no subscription to ${target.family} ${target.id}${req.outcome ? ` (outcome ${req.outcome})` : ''}.`,
          );
        this.unsubscribe(sub);
        this.send(unsubscribedMessage(req.id));
        return;
      }
      if (this.subs.has(key))
        throw new PmtapeError(
          'invalid_parameter',
          `Already subscribed to ${target.family} ${target.id}; unsubscribe first to start again from another point.`,
        );
      if (this.subs.size >= this.svc.limits.maxSubscriptions) {
        throw new PmtapeError('invalid_parameter', `A connection may hold at most ${this.svc.limits.maxSubscriptions} subscriptions.`);
      }
      let start: StartPoint = { kind: 'live' };
      if (req.from.kind === 'time') start = { kind: 'time', t: req.from.t };
      else if (req.from.kind === 'seq') start = { kind: 'seq', startSeq: req.from.after + 1 };
      else if (req.from.kind === 'cursor') start = { kind: 'seq', startSeq: await this.svc.cursorStart(target, req, req.from.text) };
      if (this.closed || this.kicked) return;
      this.subscribe(key, target, req, start);
    } catch (err) {
      if (err instanceof PmtapeError) this.sendError(req.id, err);
      else throw err;
    }
  }

  private subscribe(key: string, target: StreamTarget, req: StreamRequest, start: StartPoint): void {
    const feed = this.svc.hub.acquire(target);
    const sub: ClientSub = {
      key,
      feed,
      variant: req.outcome,
      skipThrough: Number.MAX_SAFE_INTEGER,
      cancelled: false,
      deliver: (_seq, msg) => this.send(msg),
    };
    this.subs.set(key, sub);
    this.send(subscribedMessage(req.id));
    const io = {
      send: (msg: string) => this.send(msg),
      writable: () => this.writable(sub),
      cancelled: () => sub.cancelled || this.closed || this.kicked,
    };
    handover(feed, sub, start, this.svc.modelFor, io).catch((err: unknown) => {
      if (sub.cancelled) return;
      const requestId = randomUUID();
      this.svc.log.error({ err, market: target.logMarket, request_id: requestId }, 'stream replay failed');
      this.unsubscribe(sub);
      this.send(errorMessage(req.id, new PmtapeError('internal', 'Internal error.'), requestId));
    });
  }

  /** Resolves when the socket has drained below the replay high-water mark (polling: ws has no drain event). */
  private async writable(sub: ClientSub): Promise<void> {
    while (!sub.cancelled && !this.closed && !this.kicked && this.ws.bufferedAmount > this.svc.limits.replayHighWaterBytes) {
      await new Promise((r) => setTimeout(r, 5));
    }
  }

  private unsubscribe(sub: ClientSub): void {
    if (sub.cancelled) return;
    sub.cancelled = true;
    this.subs.delete(sub.key);
    this.svc.hub.release(sub.feed, sub);
  }

  private dropSubscriptions(): void {
    for (const sub of [...this.subs.values()]) this.unsubscribe(sub);
  }

  private onClose(): void {
    if (this.closed) return;
    this.closed = true;
    this.dropSubscriptions();
    streamClients.dec();
  }
}
