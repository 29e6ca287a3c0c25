// One upstream WebSocket kept alive for a recorder: connect, reconnect with capped jittered backoff,
// honour 429 + Retry-After on the upgrade, send a text heartbeat, and declare the connection stale
// when nothing (not even the heartbeat answer) arrived for `staleAfterMs`. Losing the connection is
// reported to `onDown` with a gap reason — never thrown.

import WebSocket from 'ws';
import type { GapReason } from '../schema/observation.js';
import { recorderConnected } from '../metrics.js';
import { Backoff, retryAfterMs } from './backoff.js';
import type { RecorderErrorCode } from './recorder.js';

export interface WsHandlers {
  /** The URL to connect to (read on every attempt). */
  url(): string;
  /** The socket is open: send subscriptions. */
  onOpen(conn: WsConnection): void;
  /** One text frame (heartbeat answers are filtered out before this). */
  onText(text: string, recvTs: number): void;
  /**
   * The connection was lost at `recvTs`; the feed was last heard at `lastMessageTs` (books are
   * invalid from then on). Called once per lost connection.
   */
  onDown(reason: GapReason, lastMessageTs: number, recvTs: number, detail: string): void;
  /** Errors to count (connect failures, 429s...). */
  onError(code: RecorderErrorCode, message: string): void;
  /** Extra upgrade headers, e.g. an operator credential (read on every attempt; never logged). */
  headers?(): Record<string, string>;
}

export interface WsOptions {
  readonly pingIntervalMs: number;
  readonly staleAfterMs: number;
  readonly backoffMinMs: number;
  readonly backoffMaxMs: number;
  /** Heartbeat frame and its answer (clob: text `PING` / `PONG`). Null sends no heartbeat. */
  readonly pingText?: string | null;
  readonly pongText?: string;
  readonly kind: string;
}

export class WsConnection {
  private ws: WebSocket | null = null;
  private readonly backoff: Backoff;
  private stopped = true;
  private reconnectTimer: NodeJS.Timeout | null = null;
  private pingTimer: NodeJS.Timeout | null = null;
  private staleTimer: NodeJS.Timeout | null = null;
  private lastHeard = 0;
  private open = false;
  private retryAfter: number | null = null;
  connects = 0;

  constructor(
    private readonly h: WsHandlers,
    private readonly o: WsOptions,
  ) {
    this.backoff = new Backoff(o.backoffMinMs, o.backoffMaxMs);
  }

  get connected(): boolean {
    return this.open;
  }

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.connect();
  }

  /** Closes for good; does not call `onDown` (the owner writes its own final records). */
  stop(): void {
    this.stopped = true;
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
    this.clearTimers();
    const ws = this.ws;
    this.ws = null;
    this.setOpen(false);
    if (ws) {
      ws.removeAllListeners();
      ws.on('error', () => undefined);
      ws.terminate();
    }
  }

  send(text: string): boolean {
    if (!this.ws || this.ws.readyState !== WebSocket.OPEN) return false;
    this.ws.send(text);
    return true;
  }

  /** Drops the current connection (e.g. after detecting a corrupt stream) and reconnects. */
  recycle(reason: GapReason, detail: string): void {
    if (this.ws) this.lost(this.ws, reason, detail);
  }

  private setOpen(v: boolean): void {
    this.open = v;
    recorderConnected.set({ kind: this.o.kind }, v ? 1 : 0);
  }

  private clearTimers(): void {
    if (this.pingTimer) clearInterval(this.pingTimer);
    if (this.staleTimer) clearTimeout(this.staleTimer);
    this.pingTimer = this.staleTimer = null;
  }

  private armStale(): void {
    if (this.staleTimer) clearTimeout(this.staleTimer);
    this.staleTimer = setTimeout(() => {
      if (this.ws) this.lost(this.ws, 'stale', `no message for ${this.o.staleAfterMs} ms`);
    }, this.o.staleAfterMs);
    this.staleTimer.unref?.();
  }

  private connect(): void {
    if (this.stopped) return;
    this.retryAfter = null;
    let ws: WebSocket;
    try {
      ws = new WebSocket(this.h.url(), {
        handshakeTimeout: Math.max(2000, this.o.staleAfterMs),
        perMessageDeflate: false,
        headers: this.h.headers?.(),
      });
    } catch (e) {
      this.h.onError('connect', `cannot connect: ${(e as Error).message}`);
      this.scheduleReconnect();
      return;
    }
    this.ws = ws;
    ws.on('unexpected-response', (_req, res) => {
      const code = res.statusCode ?? 0;
      if (code === 429) {
        this.retryAfter = retryAfterMs(res.headers['retry-after']) ?? null;
        this.h.onError('http_429', `upgrade answered 429 (Retry-After ${this.retryAfter ?? '?'} ms)`);
      } else {
        this.h.onError(code >= 500 ? 'http_5xx' : 'connect', `upgrade answered ${code}`);
      }
      res.resume();
      this.lost(ws, 'upstream_error', `upgrade answered ${code}`);
    });
    ws.on('open', () => {
      if (this.ws !== ws) return;
      this.connects++;
      this.setOpen(true);
      this.lastHeard = Date.now();
      this.armStale();
      if (this.o.pingText) {
        this.pingTimer = setInterval(() => {
          if (ws.readyState === WebSocket.OPEN) ws.send(this.o.pingText!);
        }, this.o.pingIntervalMs);
        this.pingTimer.unref?.();
      }
      try {
        this.h.onOpen(this);
      } catch (e) {
        this.h.onError('internal', `subscribe failed: ${(e as Error).message}`);
      }
    });
    ws.on('message', (data, isBinary) => {
      if (this.ws !== ws) return;
      const now = Date.now();
      this.lastHeard = now;
      this.armStale();
      this.backoff.reset();
      const text = isBinary ? Buffer.from(data as Buffer).toString('utf8') : (data as Buffer).toString('utf8');
      if (this.o.pongText !== undefined && text === this.o.pongText) return;
      try {
        this.h.onText(text, now);
      } catch (e) {
        // A bug in a handler must not take the process down with the socket's event loop.
        this.h.onError('internal', `message handler threw: ${(e as Error).message}`);
      }
    });
    ws.on('close', (code, reason) => this.lost(ws, 'disconnected', `closed ${code} ${reason.toString().slice(0, 80)}`.trim()));
    ws.on('error', (err) => {
      this.h.onError('connect', `socket error: ${err.message}`);
      this.lost(ws, 'disconnected', err.message);
    });
  }

  /** Handles the loss of `ws` exactly once, then schedules a reconnect. */
  private lost(ws: WebSocket, reason: GapReason, detail: string): void {
    if (this.ws !== ws) return;
    this.ws = null;
    const wasOpen = this.open;
    this.clearTimers();
    this.setOpen(false);
    ws.removeAllListeners();
    ws.on('error', () => undefined);
    ws.terminate();
    const now = Date.now();
    if (wasOpen) {
      this.h.onError(reason === 'stale' ? 'stale' : 'disconnected', `connection lost (${reason}): ${detail}`);
      this.h.onDown(reason, reason === 'stale' ? this.lastHeard : now, now, detail);
    }
    this.scheduleReconnect();
  }

  private scheduleReconnect(): void {
    if (this.stopped) return;
    const delay = Math.max(this.backoff.next(), this.retryAfter ?? 0);
    this.reconnectTimer = setTimeout(() => this.connect(), delay);
  }
}
