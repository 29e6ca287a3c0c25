// wallet feed (transport, per ../shared/venues/wallet.md; wire names in ./fields.ts): a catalogue
// loop joins wallet topics to underlying markets; the order-book WebSocket carries full-snapshot
// pushes (older versions dropped), server heartbeats are echoed, every (re)connect is followed by a
// REST snapshot per market and the span without a book is a gap; metric samples are polled by REST.

import type { WalletMarket } from '../../schema/market.js';
import type { BookSnapshot, MetricSample } from '../../schema/observation.js';
import type { LogKey } from '../../storage/index.js';
import { sleep } from '../backoff.js';
import { Recorder, type RecorderDeps } from '../recorder.js';
import { RestClient } from '../rest.js';
import { WsConnection } from '../ws-connection.js';
import type { RecorderKind } from '../recorder.js';
import { API_KEY_HEADER, PATHS, QUERY, TOPIC, UP_DOWN_VARIANT, WS, bookTopic } from './fields.js';
import {
  WALLET_CATALOG,
  frameKind,
  frameMarketId,
  listPage,
  normalizeFrame,
  normalizeMetrics,
  normalizeRestBook,
  normalizeWalletMarket,
  topicMarketId,
} from './normalize.js';
import { VersionGate } from './order.js';
import { catalogChange, UnwrittenCatalog } from '../catalog-diff.js';

export const walletKey = (marketId: string, stream: 'books' | 'metrics' | 'catalog'): LogKey => ({
  family: 'wallet-prediction',
  stream,
  market: marketId,
});

export interface WalletFeedOptions {
  /** Metric sample period (default: the catalogue poll period). */
  readonly metricsEveryMs?: number;
  readonly maxPages?: number;
}

export class WalletRecorder extends Recorder {
  readonly kind = 'wallet';
  readonly family = 'wallet-prediction' as const;
  readonly rest: RestClient;
  readonly conn: WsConnection;
  private readonly abort = new AbortController();
  private readonly markets = new Map<string, WalletMarket>();
  private readonly unwritten = new UnwrittenCatalog();
  /** Open markets whose books we record (subscribed whenever the socket is up). */
  private readonly wanted = new Set<string>();
  private readonly gate = new VersionGate();
  private readonly lastTrade = new Map<string, string>();
  private loops: Promise<void>[] = [];
  private requestId = 0;
  private resyncing = false;
  /** Counters for tests and status. */
  dropped = 0;
  books = 0;
  snapshots = 0;

  constructor(
    deps: RecorderDeps,
    private readonly opts: WalletFeedOptions = {},
  ) {
    super(deps);
    const up = deps.config.upstreams.wallet;
    const headers = up.api_key ? { [API_KEY_HEADER]: up.api_key } : undefined;
    this.rest = new RestClient({
      baseUrl: up.rest ?? '',
      ratePerS: up.rate_per_s ?? 5,
      headers,
      signal: this.abort.signal,
      onAttemptError: (e) => {
        if (!this.stopping) this.reportError(e.code, e.message);
      },
    });
    const t = deps.config.recorders;
    this.conn = new WsConnection(
      {
        url: () => up.ws ?? '',
        headers: () => headers ?? {},
        onOpen: () => this.onOpen(),
        onText: (text, recvTs) => this.onText(text, recvTs),
        onDown: (reason, lastTs, recvTs, detail) => {
          for (const id of this.wanted) this.openGap(walletKey(id, 'books'), reason, lastTs, recvTs, detail);
        },
        onError: (code, message) => this.reportError(code, message),
      },
      // The venue's heartbeat is server-initiated (echoed in onText): no client ping. A socket
      // that stays silent past staleAfterMs (heartbeats included) is stale and recycled.
      {
        pingIntervalMs: t.pingIntervalMs,
        staleAfterMs: deps.config.staleAfterMs,
        backoffMinMs: t.backoffMinMs,
        backoffMaxMs: t.backoffMaxMs,
        pingText: null,
        kind: 'wallet',
      },
    );
  }

  async start(): Promise<void> {
    const up = this.deps.config.upstreams.wallet;
    if (!up.rest || !up.ws) throw new Error('config: upstreams.wallet.rest and upstreams.wallet.ws are required for the wallet recorder');
    // Not awaited: an unreachable venue must not hold up the other kinds of the process.
    this.loops = [this.run()];
  }

  /** First catalogue pass (so the socket opens with markets to subscribe), then the loops. */
  private async run(): Promise<void> {
    await this.refreshCatalog().catch((e: unknown) => this.reportError('internal', `catalogue pass failed: ${(e as Error).message}`));
    if (this.stopping) return;
    this.conn.start();
    await Promise.all([this.catalogLoop(), this.metricsLoop()]);
  }

  async stop(): Promise<void> {
    this.stopping = true;
    this.abort.abort();
    this.conn.stop();
    await Promise.all(this.loops);
    // from now on nobody vouches for these books: an open gap until the next process closes it
    const now = Date.now();
    for (const id of this.wanted) this.openGap(walletKey(id, 'books'), 'not_recording', now, now, 'recorder stopped');
  }

  isConnected(): boolean {
    return this.conn.connected;
  }

  connectedMarkets(): string[] {
    return this.conn.connected ? [...this.wanted].filter((id) => !this.gapOpen(walletKey(id, 'books'))) : [];
  }

  /** Markets whose books are followed (open, in this shard), connected or not. */
  followedMarkets(): string[] {
    return [...this.wanted];
  }

  private outcomesOf = (id: string) => this.markets.get(id)?.outcomes;

  // ---- WebSocket ----

  private send(method: string, params: string[], data: unknown = null): void {
    this.conn.send(JSON.stringify({ [WS.method]: method, [WS.requestId]: ++this.requestId, [WS.params]: params, [WS.data]: data }));
  }

  private onOpen(): void {
    const ids = [...this.wanted];
    if (ids.length > 0) this.send(WS.subscribe, ids.map(bookTopic));
    // Pushes missed while we were away are gone for good: a REST snapshot re-establishes each book.
    void this.snapshotAll(ids);
  }

  /**
   * An unparseable frame may have been any market's newest snapshot: every followed book is
   * invalid from now until a fresh one arrives (next push or a REST re-read, whichever is first).
   */
  private resync(recvTs: number): void {
    const ids = [...this.wanted];
    for (const id of ids) this.openGap(walletKey(id, 'books'), 'upstream_error', recvTs, recvTs, 'unparseable frame');
    if (this.resyncing) return;
    this.resyncing = true;
    void this.snapshotAll(ids).finally(() => (this.resyncing = false));
  }

  private async snapshotAll(ids: string[]): Promise<void> {
    for (const id of ids) {
      if (this.stopping) return;
      await this.snapshot(id);
    }
  }

  private async snapshot(id: string): Promise<void> {
    let body: unknown;
    try {
      body = await this.rest.getJson(PATHS.orderbook(id));
    } catch {
      return; // reported; the gap stays open until a push or the next snapshot
    }
    const recv = Date.now();
    const obs = normalizeRestBook(body, recv, this.outcomesOf, (w) => this.reportError('malformed', w));
    if (obs.length === 0) return;
    this.snapshots++;
    this.keepBook(id, obs[0], recv);
  }

  private onText(text: string, recvTs: number): void {
    let frame: unknown;
    try {
      frame = JSON.parse(text);
    } catch {
      this.countMessage('malformed', recvTs);
      this.reportError('malformed', `unparseable frame (${text.length} bytes)`);
      this.resync(recvTs);
      return;
    }
    const kind = frameKind(frame);
    if (kind === 'heartbeat') {
      // echo the server's payload unchanged, or the venue closes us
      this.conn.send(JSON.stringify({ [WS.method]: WS.heartbeat, [WS.data]: (frame as Record<string, unknown>)[WS.data] }));
      this.countMessage('ignored', recvTs);
      return;
    }
    if (kind === 'reply') {
      const f = frame as Record<string, unknown>;
      if (f[WS.success] === false)
        this.reportError('unknown_type', `request ${String(f[WS.requestId])} refused: ${JSON.stringify(f[WS.error]).slice(0, 200)}`);
      this.countMessage('ignored', recvTs);
      return;
    }
    if (kind === 'unknown') {
      this.countMessage('unknown_type', recvTs);
      return;
    }
    const id = frameMarketId(frame);
    if (id === null || !this.wanted.has(id)) {
      this.countMessage('ignored', recvTs);
      return;
    }
    const obs = normalizeFrame(frame, recvTs, this.outcomesOf, (w) => this.reportError('malformed', w));
    if (obs.length === 0 || obs[0].type !== 'book') {
      this.countMessage('malformed', recvTs);
      return;
    }
    this.keepBook(id, obs[0], recvTs);
  }

  /** Writes a book unless an equal or newer version is already kept; closes the market's gap. */
  private keepBook(id: string, book: BookSnapshot, recvTs: number): void {
    if (!this.wanted.has(id)) return;
    if (!this.gate.accept(id, { version: book.version ?? null, ts: book.source_ts })) {
      this.dropped++;
      this.countMessage('duplicate', recvTs);
      return;
    }
    this.countMessage('ok', recvTs);
    const key = walletKey(id, 'books');
    if (this.gapOpen(key)) this.closeGap(key, recvTs);
    this.books++;
    void this.deps.sink.append(key, book, { checkpoint: true });
  }

  // ---- catalogue ----

  private async catalogLoop(): Promise<void> {
    while (!this.stopping) {
      await sleep(this.deps.config.recorders.catalogPollMs, this.abort.signal);
      if (this.stopping) break;
      await this.refreshCatalog().catch((e: unknown) => this.reportError('internal', `catalogue pass failed: ${(e as Error).message}`));
    }
  }

  private async listAll(path: string): Promise<unknown[] | null> {
    const out: unknown[] = [];
    let cursor = '';
    for (let page = 0; page < (this.opts.maxPages ?? 20); page++) {
      let body: unknown;
      try {
        body = await this.rest.getJson(path, { [QUERY.limit]: 100, [QUERY.cursor]: cursor || undefined });
      } catch {
        return null;
      }
      const p = listPage(body, (w) => this.reportError('malformed', `${path}: ${w}`));
      if (p === null) return null;
      out.push(...p.items);
      if (!p.cursor) return out;
      cursor = p.cursor;
    }
    return out;
  }

  /** One pass: topics joined to markets; changes recorded; subscriptions follow open markets. */
  async refreshCatalog(): Promise<void> {
    const topics = await this.listAll(PATHS.topics);
    const raws = topics === null ? null : await this.listAll(PATHS.markets);
    if (topics === null || raws === null) return; // incomplete listing: change nothing
    const byId = new Map<string, unknown>();
    for (const m of raws) {
      const id = typeof m === 'object' && m !== null ? (m as Record<string, unknown>).id : undefined;
      if (typeof id === 'number' || typeof id === 'string') byId.set(String(id), m);
    }
    const cfg = this.deps.config;
    const seen = new Set<string>();
    for (const t of topics) {
      const variant = typeof t === 'object' && t !== null ? (t as Record<string, unknown>)[TOPIC.variant] : undefined;
      if (variant !== undefined && variant !== UP_DOWN_VARIANT) continue;
      const mid = topicMarketId(t);
      if (mid === null || !byId.has(mid)) continue;
      const m = normalizeWalletMarket(t, byId.get(mid), (w) => this.reportError('malformed', w));
      if (!m || !cfg.coins.includes(m.coin) || (m.window !== null && !cfg.windows.includes(m.window)) || !this.deps.inShard(m.market_id))
        continue;
      seen.add(m.market_id);
      await this.observe(m);
    }
    for (const id of [...this.markets.keys()]) if (!seen.has(id)) await this.forget(id);
  }

  private async observe(m: WalletMarket): Promise<void> {
    const id = m.market_id;
    let prev = this.unwritten.stale(id) ? null : (this.markets.get(id) ?? null);
    if (prev === null) {
      const last = await this.deps.sink.lastRecord(walletKey(id, 'catalog'));
      if (last?.type === 'catalog' && last.market.family === 'wallet-prediction') prev = last.market;
    }
    const ev = catalogChange(WALLET_CATALOG, prev, m, Date.now());
    if (ev) void this.unwritten.append(this.deps.sink, walletKey(id, 'catalog'), ev);
    this.markets.set(id, m);
    const want = m.status === 'open';
    if (want && !this.wanted.has(id)) await this.follow(id);
    else if (!want && this.wanted.has(id)) await this.unfollow(id);
  }

  private async follow(id: string): Promise<void> {
    const key = walletKey(id, 'books');
    const last = await this.deps.sink.lastRecord(key);
    const lastBook = last?.type === 'book' ? last : null;
    if (lastBook) this.gate.seed(id, { version: lastBook.version ?? null, ts: lastBook.source_ts });
    await this.resumeGap(key);
    this.wanted.add(id);
    // While the socket is down, onOpen subscribes it; coverage starts at its first book.
    if (this.conn.connected) {
      this.send(WS.subscribe, [bookTopic(id)]);
      void this.snapshot(id);
    }
  }

  private async unfollow(id: string): Promise<void> {
    this.wanted.delete(id);
    if (this.conn.connected) this.send(WS.unsubscribe, [bookTopic(id)]);
    const now = Date.now();
    this.openGap(walletKey(id, 'books'), 'not_recording', now, now, 'market no longer open');
    this.dropGap(walletKey(id, 'books')); // stays open in the log: no book is recorded after it
    this.gate.forget(id);
    await this.deps.sink.closeKey(walletKey(id, 'books'));
    await this.deps.sink.closeKey(walletKey(id, 'metrics'));
  }

  private async forget(id: string): Promise<void> {
    if (this.wanted.has(id)) await this.unfollow(id);
    this.markets.delete(id);
    this.unwritten.forget(id);
    for (const k of [...this.lastTrade.keys()]) if (k.startsWith(`${id}\u0000`)) this.lastTrade.delete(k);
    await this.deps.sink.closeKey(walletKey(id, 'catalog'));
  }

  // ---- metrics ----

  private async metricsLoop(): Promise<void> {
    while (!this.stopping) {
      await sleep(this.opts.metricsEveryMs ?? this.deps.config.recorders.catalogPollMs, this.abort.signal);
      for (const id of [...this.wanted]) {
        if (this.stopping) return;
        await this.sampleMetrics(id);
      }
    }
  }

  async sampleMetrics(id: string): Promise<void> {
    let body: unknown;
    try {
      body = await this.rest.getJson(PATHS.metrics(id));
    } catch {
      return;
    }
    const recv = Date.now();
    const samples = normalizeMetrics(body, recv, this.outcomesOf, (w) => this.reportError('malformed', w));
    for (const s of samples) {
      if (!this.wanted.has(id)) return;
      if (s.metric === 'last_trade' && !this.newTrade(id, s)) continue; // the same print again
      void this.deps.sink.append(walletKey(id, 'metrics'), s);
    }
  }

  private newTrade(id: string, s: MetricSample): boolean {
    const k = `${id}\u0000${s.outcome}`;
    const sig = `${s.source_ts}:${s.value}`;
    if (this.lastTrade.get(k) === sig) return false;
    this.lastTrade.set(k, sig);
    return true;
  }
}

export const walletKind: RecorderKind = {
  kind: 'wallet',
  create: (deps) => new WalletRecorder(deps),
};
