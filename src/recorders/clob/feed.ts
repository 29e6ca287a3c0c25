// clob feed (transport, per shared/venues/clob.md): one market WebSocket subscribed to the outcome
// tokens of every tracked market of the coin directory; books rebuilt per market with the recorder
// rules (book.ts); every span without valid books is a gap record; checkpoints per storage policy.
// Markets are added as the catalogue lists them and dropped once they close.

import type { CoinMarket } from '../../schema/market.js';
import type { LogKey } from '../../storage/index.js';
import type { GapReason, Observation } from '../../schema/observation.js';
import { Recorder, type RecorderDeps } from '../recorder.js';
import { RecorderBooks } from '../book.js';
import { WsConnection } from '../ws-connection.js';
import { coinDirectory, type CoinDirectory } from '../catalog/directory.js';
import { idsInDamagedFrame, newStats, normalizeClobText } from './normalize.js';
import type { RecorderKind } from '../recorder.js';

interface Tracked {
  readonly market: CoinMarket;
  readonly key: LogKey;
  readonly books: RecorderBooks;
  ready: boolean;
  /** When fresh books were last asked for by resubscribing (0 = not waiting). */
  resnapshotAt: number;
}

export const booksKey = (marketId: string): LogKey => ({ family: 'coin', stream: 'books', market: marketId });

export class ClobRecorder extends Recorder {
  readonly kind = 'clob';
  readonly family = 'coin' as const;
  private readonly markets = new Map<string, Tracked>();
  private readonly byToken = new Map<string, Tracked>();
  private readonly conn: WsConnection;
  private readonly directory: CoinDirectory;
  private readonly recent: string[] = [];
  private recentAt = 0;
  private readonly stats = newStats();
  private timer: NodeJS.Timeout | null = null;
  private syncing: Promise<void> = Promise.resolve();
  dropped = 0;

  constructor(deps: RecorderDeps) {
    super(deps);
    const c = deps.config;
    this.directory = coinDirectory(deps);
    this.conn = new WsConnection(
      {
        url: () => c.upstreams.clob.ws ?? '',
        onOpen: () => this.subscribeAll(),
        onText: (text, recvTs) => this.onText(text, recvTs),
        onDown: (reason, since, recvTs, detail) => this.invalidateAll(reason, since, recvTs, detail),
        onError: (code, msg) => this.reportError(code, msg),
      },
      {
        kind: 'clob',
        pingText: 'PING',
        pongText: 'PONG',
        pingIntervalMs: c.recorders.pingIntervalMs,
        staleAfterMs: c.staleAfterMs,
        backoffMinMs: c.recorders.backoffMinMs,
        backoffMaxMs: c.recorders.backoffMaxMs,
      },
    );
  }

  async start(): Promise<void> {
    if (!this.deps.config.upstreams.clob.ws) throw new Error('config: upstreams.clob.ws is required for the clob recorder');
    this.directory.on('change', this.onDirectory);
    await this.sync();
    this.conn.start();
    const tickMs = Math.max(50, Math.min(1000, this.deps.config.storage.checkpointEveryMs / 4));
    this.timer = setInterval(() => {
      void this.sync();
      const now = Date.now();
      for (const t of this.markets.values()) this.maybeCheckpoint(t, now);
      this.checkResnapshots(now);
    }, tickMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    this.stopping = true;
    this.directory.off('change', this.onDirectory);
    if (this.timer) clearInterval(this.timer);
    this.conn.stop();
    await this.syncing;
    this.flushHeldGaps();
    const now = Date.now();
    for (const t of this.markets.values()) {
      // A hole of another reason ends here; from now on the recorder is simply not running.
      if (this.gapOpen(t.key)) this.closeGap(t.key, now);
      this.openGap(t.key, 'not_recording', now, now, 'recorder stopped');
    }
  }

  isConnected(): boolean {
    return this.conn.connected;
  }

  connectedMarkets(): string[] {
    if (!this.conn.connected) return [];
    return [...this.markets.values()].filter((t) => !this.gapOpen(t.key) && !t.books.incomplete).map((t) => t.market.market_id);
  }

  /** Markets recorded by this process: in shard, not closed, window starting within the lookahead. */
  private wanted(m: CoinMarket, now: number): boolean {
    if (!this.deps.inShard(m.market_id) || m.outcomes.length === 0) return false;
    if (m.status !== 'upcoming' && m.status !== 'open') return false;
    if (m.end_time !== null && m.end_time <= now) return false;
    return m.start_time === null || m.start_time - now <= this.deps.config.recorders.lookaheadMs;
  }

  private readonly onDirectory = (): void => {
    void this.sync();
  };

  /** Reconciles tracked markets with the directory (serialized: one sync at a time). */
  private sync(): Promise<void> {
    this.syncing = this.syncing
      .then(() => this.syncOnce())
      .catch((e: unknown) => this.reportError('internal', `sync failed: ${(e as Error).message}`));
    return this.syncing;
  }

  private async syncOnce(): Promise<void> {
    if (this.stopping) return;
    const now = Date.now();
    const add: CoinMarket[] = [];
    for (const m of this.directory.all()) if (!this.markets.has(m.market_id) && this.wanted(m, now)) add.push(m);
    const remove = [...this.markets.values()].filter((t) => {
      const m = this.directory.get(t.market.market_id) ?? t.market;
      return !this.wanted(m, now);
    });
    for (const m of add) {
      const t: Tracked = {
        market: m,
        key: booksKey(m.market_id),
        books: new RecorderBooks(
          m.outcomes.map((o) => o.token_id),
          { everyDeltas: this.deps.config.storage.checkpointEveryDeltas, everyMs: this.deps.config.storage.checkpointEveryMs },
        ),
        ready: false,
        resnapshotAt: 0,
      };
      this.markets.set(m.market_id, t);
      for (const o of m.outcomes) this.byToken.set(o.token_id, t);
      await this.resumeGap(t.key);
      if (this.stopping) return;
      t.ready = true;
    }
    if (add.length > 0)
      this.send(
        'subscribe',
        add.flatMap((m) => m.outcomes.map((o) => o.token_id)),
      );
    if (remove.length > 0) {
      this.send(
        'unsubscribe',
        remove.flatMap((t) => t.market.outcomes.map((o) => o.token_id)),
      );
      for (const t of remove) {
        this.markets.delete(t.market.market_id);
        for (const o of t.market.outcomes) this.byToken.delete(o.token_id);
        this.openGap(t.key, 'not_recording', now, now, 'market closed; no longer recorded');
        this.dropGap(t.key);
        void this.deps.sink.closeKey(t.key);
      }
    }
  }

  private send(operation: 'subscribe' | 'unsubscribe', tokens: string[]): void {
    if (tokens.length === 0) return;
    this.conn.send(JSON.stringify({ operation, assets_ids: tokens, ...(operation === 'subscribe' ? { initial_dump: true } : {}) }));
  }

  private subscribeAll(): void {
    const tokens = [...this.byToken.keys()];
    this.conn.send(JSON.stringify({ assets_ids: tokens, type: 'market', initial_dump: true }));
  }

  /**
   * If a resubscribe did not bring fresh books within the stale timeout, the venue did not honour
   * it: reconnecting is the one way that always ends with a full dump.
   */
  private checkResnapshots(now: number): void {
    if (!this.conn.connected) return;
    let overdue = false;
    for (const t of this.markets.values()) {
      if (t.resnapshotAt === 0) continue;
      if (!t.books.incomplete) t.resnapshotAt = 0;
      else if (now - t.resnapshotAt > this.deps.config.staleAfterMs) overdue = true;
    }
    if (!overdue) return;
    for (const t of this.markets.values()) t.resnapshotAt = 0;
    this.reportError('sequence_gap', 'resubscribing brought no fresh books; reconnecting');
    this.conn.recycle('upstream_error', 'no fresh books after resubscribing');
  }

  /** Asks for fresh books of some markets (the venue sends a `book` per token on subscribe). */
  private resnapshot(ts: Tracked[]): void {
    const now = Date.now();
    for (const t of ts) if (t.resnapshotAt === 0) t.resnapshotAt = now;
    const tokens = ts.flatMap((t) => t.market.outcomes.map((o) => o.token_id));
    this.send('unsubscribe', tokens);
    this.send('subscribe', tokens);
  }

  private invalidate(t: Tracked, reason: GapReason, since: number, recvTs: number, detail: string): void {
    const hadValid = t.books.books.validTokens().length > 0;
    t.books.invalidate(recvTs);
    this.openGap(t.key, reason, since, recvTs, detail, hadValid);
  }

  private invalidateAll(reason: GapReason, since: number, recvTs: number, detail: string): void {
    for (const t of this.markets.values()) this.invalidate(t, reason, since, recvTs, detail);
  }

  /** A frame identical to one of the last few is a duplicate (the venue or a proxy repeating). */
  private isDuplicate(text: string): boolean {
    for (let i = 0; i < this.recent.length; i++) if (this.recent[i] === text) return true;
    this.recent[this.recentAt] = text;
    this.recentAt = (this.recentAt + 1) % 4;
    return false;
  }

  private onText(text: string, recvTs: number): void {
    if (this.stopping) return;
    if (text.length > 64 && this.isDuplicate(text)) {
      this.countMessage('duplicate', recvTs);
      return;
    }
    // One tally object per recorder, reset per frame (a fresh one per message is garbage).
    const stats = this.stats;
    stats.ok = stats.ignored = stats.unknown = stats.malformed = 0;
    let obs: Observation[] | null;
    try {
      obs = normalizeClobText(text, recvTs, stats);
    } catch (e) {
      this.reportError('internal', `normalizer threw: ${(e as Error).message}`);
      return;
    }
    if (obs === null) return this.onDamaged(text, recvTs);
    this.countMessage(stats.malformed ? 'malformed' : stats.unknown ? 'unknown_type' : stats.ok ? 'ok' : 'ignored', recvTs);
    if (stats.unknown) this.reportError('unknown_type', 'unknown event type ignored', text.slice(0, 120));
    if (stats.malformed) this.reportError('malformed', 'malformed event skipped', text.slice(0, 120));
    if (obs.length === 0) return;
    // One frame's records of a market go to storage as one group (see LogSink.beginFrame).
    const sink = this.deps.sink;
    sink.beginFrame();
    try {
      for (const o of obs) this.route(o, recvTs);
    } finally {
      sink.endFrame();
    }
  }

  /** An unparseable frame may have carried changes: the markets it names (or all) resnapshot. */
  private onDamaged(text: string, recvTs: number): void {
    this.countMessage('malformed', recvTs);
    this.reportError('malformed', 'unparseable frame; resnapshotting the markets it may have touched', text.slice(0, 120));
    const ids = idsInDamagedFrame(text);
    const hit = new Set<Tracked>();
    if (!text.trimStart().startsWith('[')) {
      for (const tok of ids.tokens) {
        const t = this.byToken.get(tok);
        if (t) hit.add(t);
      }
      for (const m of ids.markets) for (const t of this.markets.values()) if (t.market.condition_id === m) hit.add(t);
    }
    const targets = hit.size > 0 ? [...hit] : [...this.markets.values()];
    for (const t of targets) this.invalidate(t, 'upstream_error', recvTs, recvTs, 'unparseable frame');
    this.resnapshot(targets);
  }

  private route(o: Observation, recvTs: number): void {
    if (!('token_id' in o) || o.token_id === undefined) return;
    const t = this.byToken.get(o.token_id);
    if (!t || !t.ready) {
      this.dropped++;
      return;
    }
    // A held after-the-fact gap goes to the log before any record of its market but a book (which
    // may belong to the same hole: see holdClosedGap).
    if (o.type !== 'book') this.flushHeldGap(t.key);
    switch (o.type) {
      case 'book': {
        const r = t.books.onBook(o);
        if (r.divergedSince === null) this.flushHeldGap(t.key);
        this.deps.sink.write(t.key, o);
        if (r.divergedSince !== null) {
          // The rebuilt book had silently drifted from the venue's: that span was not a valid book.
          this.reportError('sequence_gap', `book of ${o.token_id} diverged from the venue's snapshot`);
          this.holdClosedGap(t.key, 'sequence_gap', r.divergedSince, recvTs, recvTs, 'rebuilt book disagreed with the next snapshot');
        }
        if (r.completed) {
          this.closeGap(t.key, recvTs);
          this.writeCheckpoint(t, recvTs);
        }
        return;
      }
      case 'book_delta': {
        const r = t.books.onDelta(o);
        if (r === 'dropped') return;
        this.deps.sink.write(t.key, o);
        if (r === 'mismatch') {
          this.reportError('sequence_gap', `top of book of ${o.token_id} disagrees with the venue; resnapshotting`);
          this.invalidate(
            t,
            'sequence_gap',
            t.books.verifiedSince(o.token_id, recvTs),
            recvTs,
            'top of book disagreed with the venue after a change',
          );
          this.resnapshot([t]);
          return;
        }
        this.maybeCheckpoint(t, recvTs);
        return;
      }
      default:
        this.deps.sink.write(t.key, o);
    }
  }

  /** A checkpoint of the market's valid books, unless a gap of its own is open. */
  override fullBooks(key: LogKey, recvTs: number): readonly Observation[] | null {
    const t = key.stream === 'books' ? this.markets.get(key.market) : undefined;
    if (!t || this.gapOpen(t.key) || t.books.incomplete) return null;
    const cp = t.books.checkpoint(recvTs);
    return cp ? [cp] : null;
  }

  private maybeCheckpoint(t: Tracked, now: number): void {
    if (!this.gapOpen(t.key) && t.books.checkpointDue(now)) this.writeCheckpoint(t, now);
  }

  private writeCheckpoint(t: Tracked, recvTs: number): void {
    this.flushHeldGap(t.key);
    const cp = t.books.checkpoint(recvTs);
    if (cp) this.deps.sink.write(t.key, cp, { checkpoint: true });
  }
}

export const clobKind: RecorderKind = {
  kind: 'clob',
  requires: ['catalog'],
  create: (deps) => new ClobRecorder(deps),
};
