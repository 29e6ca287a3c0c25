// yesno feed (transport, per ../shared/venues/yesno.md): public REST only. A catalogue loop lists
// the configured series' markets (recording each status/result/settlement change once); a book loop
// polls every active market's order book, earliest due first, at an adaptive cadence inside the
// rate budget. A failed poll opens a gap (never a repeated old book); the next good book closes it.

import type { YesNoMarket } from '../../schema/market.js';
import type { GapReason } from '../../schema/observation.js';
import type { LogKey } from '../../storage/index.js';
import { Backoff, sleep } from '../backoff.js';
import { Recorder, RecorderError, type RecorderDeps } from '../recorder.js';
import { RestClient } from '../rest.js';
import type { RecorderKind } from '../recorder.js';
import { PollCadence } from './cadence.js';
import { catalogChange, UnwrittenCatalog } from '../catalog-diff.js';
import { YESNO_CATALOG, eventSeries, marketsPage, normalizeMarket, normalizeOrderbook } from './normalize.js';

export const yesnoBooksKey = (ticker: string): LogKey => ({ family: 'yesno-exchange', stream: 'books', market: ticker });
export const yesnoCatalogKey = (ticker: string): LogKey => ({ family: 'yesno-exchange', stream: 'catalog', market: ticker });

/** The venue's status word for a market whose book is live. */
const ACTIVE = 'active';

export interface YesNoFeedOptions {
  /** Share of the rate budget the book polls plan for (the catalogue uses the rest). */
  readonly bookShare?: number;
  /** Book polls in flight at once (latency must not cap the rate). */
  readonly maxInFlight?: number;
  readonly timeoutMs?: number;
  /** Pages per series per catalogue pass (a bound against a runaway cursor). */
  readonly maxPages?: number;
}

export class YesNoRecorder extends Recorder {
  readonly kind = 'yesno';
  readonly family = 'yesno-exchange' as const;
  readonly rest: RestClient;
  readonly cadence: PollCadence;
  private readonly abort = new AbortController();
  private readonly markets = new Map<string, YesNoMarket>();
  private readonly unwritten = new UnwrittenCatalog();
  private readonly eventSeriesMap = new Map<string, string>();
  /** Per ticker: the restart check of its books log, awaited by every poll (a slow writer open must not let a book overtake it). */
  private readonly resumed = new Map<string, Promise<void>>();
  private readonly lastGood = new Map<string, number>();
  private readonly backoff429 = new Backoff(1000, 60_000);
  private loops: Promise<void>[] = [];
  private lastOkTs = 0;
  private last429Ts = 0;
  /** Book polls issued / books written (for tests and the bench). */
  polls = 0;
  books = 0;

  constructor(
    deps: RecorderDeps,
    private readonly opts: YesNoFeedOptions = {},
  ) {
    super(deps);
    const up = deps.config.upstreams.yesno;
    const rate = up.rate_per_s ?? 10;
    this.cadence = new PollCadence(rate, opts.bookShare ?? 0.9);
    this.rest = new RestClient({
      baseUrl: up.rest ?? '',
      ratePerS: rate,
      attempts: 1, // a failed book poll is a gap; the next scheduled poll is the retry
      timeoutMs: opts.timeoutMs ?? 10_000,
      signal: this.abort.signal,
      onAttemptError: (e) => this.onRestError(e),
    });
  }

  async start(): Promise<void> {
    if (!this.deps.config.upstreams.yesno.rest) throw new Error('config: upstreams.yesno.rest is required for the yesno recorder');
    this.loops = [this.catalogLoop(), this.bookLoop()];
  }

  async stop(): Promise<void> {
    this.stopping = true;
    this.abort.abort();
    await Promise.all(this.loops);
    // from now on nobody vouches for these books: an open gap until the next process closes it
    const now = Date.now();
    for (const t of this.resumed.keys()) this.openGap(yesnoBooksKey(t), 'not_recording', now, now, 'recorder stopped');
  }

  isConnected(): boolean {
    return this.lastOkTs > 0 && Date.now() - this.lastOkTs <= this.deps.config.staleAfterMs;
  }

  connectedMarkets(): string[] {
    return this.activeTickers().filter((t) => !this.gapOpen(yesnoBooksKey(t)) && this.lastGood.has(t));
  }

  /** Active markets that have had a good book in this process (live or not right now). */
  polledMarkets(): string[] {
    return [...this.lastGood.keys()];
  }

  /** The interval in force now for the current number of active markets. */
  currentIntervalMs(): number {
    return this.cadence.intervalMs(this.activeTickers().length);
  }

  private activeTickers(): string[] {
    return [...this.markets.values()].filter((m) => m.status === ACTIVE).map((m) => m.ticker);
  }

  private onRestError(e: RecorderError): void {
    if (this.stopping) return;
    this.reportError(e.code, e.message);
    // Retry-After already paused the budget; repeated 429s back off further (capped, jittered).
    // Requests already in flight when the first 429 came answer 429 too: they do not escalate.
    if (e.code === 'http_429') {
      const now = Date.now();
      if (now - this.last429Ts > 500) this.rest.bucket.pauseUntil(now + this.backoff429.next());
      this.last429Ts = now;
    }
  }

  // ---- catalogue ----

  private async catalogLoop(): Promise<void> {
    while (!this.stopping) {
      await this.refreshCatalog().catch((e: unknown) => this.reportError('internal', `catalogue pass failed: ${(e as Error).message}`));
      await sleep(this.deps.config.recorders.catalogPollMs, this.abort.signal);
    }
  }

  private async get(path: string, query?: Record<string, string | number | undefined>): Promise<unknown> {
    try {
      const body = await this.rest.getJson(path, query);
      this.lastOkTs = Date.now();
      this.backoff429.reset();
      return body;
    } catch {
      return null; // already counted and logged by onRestError
    }
  }

  /**
   * One pass over every configured series: all listings first, then the changes, so the book
   * schedule sees the whole set of active markets at once.
   */
  async refreshCatalog(): Promise<void> {
    const cfg = this.deps.config;
    const listed: Array<{ series: string; raws: unknown[]; complete: boolean }> = [];
    for (const series of cfg.series) {
      if (this.stopping) return;
      const raws: unknown[] = [];
      let cursor = '';
      let complete = false;
      for (let page = 0; page < (this.opts.maxPages ?? 20); page++) {
        const body = await this.get('/markets', {
          series_ticker: series,
          min_close_ts: Math.floor((Date.now() - cfg.recorders.resolveHorizonMs) / 1000),
          limit: 200,
          cursor: cursor || undefined,
        });
        const p = body === null ? null : marketsPage(body, (w) => this.reportError('malformed', w));
        if (p === null) break;
        raws.push(...p.markets);
        cursor = p.cursor;
        if (!cursor) {
          complete = true;
          break;
        }
      }
      await this.learnEvents(series, raws);
      listed.push({ series, raws, complete });
    }
    for (const { series, raws, complete } of listed) {
      const seen = new Set<string>();
      for (const raw of raws) {
        const m = normalizeMarket(
          raw,
          (e) => this.eventSeriesMap.get(e),
          (w) => this.reportError('malformed', w),
        );
        if (!m || !this.deps.inShard(m.ticker)) continue;
        seen.add(m.ticker);
        await this.observeMarket(m);
      }
      // Markets that scrolled out of a complete listing are done: release their logs.
      if (complete) {
        for (const [t, m] of this.markets) if (m.series_ticker === series && !seen.has(t)) await this.forget(t);
      }
    }
  }

  /**
   * The market may not name its series (unverified upstream): when some market's event is unknown,
   * one `/events?series_ticker=` listing per pass maps events to series (else the ticker prefix).
   */
  private async learnEvents(series: string, raws: unknown[]): Promise<void> {
    const unknown = raws.some((r) => {
      const o = typeof r === 'object' && r !== null ? (r as { event_ticker?: unknown; series_ticker?: unknown }) : null;
      return o !== null && typeof o.event_ticker === 'string' && o.series_ticker === undefined && !this.eventSeriesMap.has(o.event_ticker);
    });
    if (!unknown) return;
    const body = await this.get('/events', { series_ticker: series, limit: 200 });
    for (const [e, s] of eventSeries(body)) this.eventSeriesMap.set(e, s);
  }

  private async observeMarket(m: YesNoMarket): Promise<void> {
    const recv = Date.now();
    let prev = this.unwritten.stale(m.ticker) ? null : (this.markets.get(m.ticker) ?? null);
    if (prev === null) {
      const last = await this.deps.sink.lastRecord(yesnoCatalogKey(m.ticker));
      if (last?.type === 'catalog' && last.market.family === 'yesno-exchange') prev = last.market;
    }
    const ev = catalogChange(YESNO_CATALOG, prev, m, recv);
    if (ev) void this.unwritten.append(this.deps.sink, yesnoCatalogKey(m.ticker), ev);
    const wasActive = this.markets.get(m.ticker)?.status === ACTIVE;
    this.markets.set(m.ticker, m);
    if (wasActive && m.status !== ACTIVE) await this.releaseBooks(m.ticker);
  }

  private async releaseBooks(ticker: string): Promise<void> {
    if (this.resumed.has(ticker)) {
      const now = Date.now();
      this.openGap(yesnoBooksKey(ticker), 'not_recording', now, now, 'market no longer active');
    }
    this.dropGap(yesnoBooksKey(ticker)); // stays open in the log: no book is recorded after it
    this.resumed.delete(ticker);
    this.lastGood.delete(ticker);
    await this.deps.sink.closeKey(yesnoBooksKey(ticker));
  }

  private async forget(ticker: string): Promise<void> {
    this.markets.delete(ticker);
    this.unwritten.forget(ticker);
    this.eventSeriesMap.delete(ticker.split('-').slice(0, -1).join('-'));
    await this.releaseBooks(ticker);
    await this.deps.sink.closeKey(yesnoCatalogKey(ticker));
  }

  // ---- books ----

  private async bookLoop(): Promise<void> {
    const inflight = new Set<Promise<void>>();
    const maxInFlight = this.opts.maxInFlight ?? 4;
    while (!this.stopping) {
      const active = this.activeTickers();
      const now = Date.now();
      this.cadence.sync(active, now);
      const next = this.cadence.next(now);
      if (next === null) {
        await sleep(200, this.abort.signal);
        continue;
      }
      if (inflight.size >= maxInFlight) {
        await Promise.race(inflight);
        continue;
      }
      if (next.waitMs > 0) {
        // short naps so markets that appear meanwhile join the schedule promptly
        await sleep(Math.min(next.waitMs, 100), this.abort.signal);
        continue;
      }
      const interval = this.cadence.intervalMs(active.length);
      this.cadence.polled(next.ticker, now, interval);
      const p: Promise<void> = this.poll(next.ticker, interval).finally(() => inflight.delete(p));
      inflight.add(p);
    }
    await Promise.all(inflight);
  }

  private async poll(ticker: string, intervalMs: number): Promise<void> {
    const key = yesnoBooksKey(ticker);
    let resume = this.resumed.get(ticker);
    if (!resume) {
      resume = this.resumeGap(key); // a downtime since this log's last record is a gap
      this.resumed.set(ticker, resume);
    }
    await resume;
    this.polls++;
    const t0 = Date.now();
    let body: unknown;
    try {
      body = await this.rest.getJson(`/markets/${encodeURIComponent(ticker)}/orderbook`, { depth: 100 });
    } catch (e) {
      if (this.stopping) return;
      const code = e instanceof RecorderError ? e.code : 'internal';
      const reason: GapReason = code === 'connect' || code === 'timeout' ? 'disconnected' : 'upstream_error';
      this.openGap(key, reason, t0, Date.now(), (e as Error).message.slice(0, 200));
      return;
    }
    const recv = Date.now();
    this.lastOkTs = recv;
    this.backoff429.reset();
    let why = '';
    const obs = normalizeOrderbook(body, recv, intervalMs, (w) => (why = w));
    if (obs.length === 0) {
      this.countMessage('malformed', recv);
      this.reportError('malformed', `order book of ${ticker}: ${why}`);
      this.openGap(key, 'upstream_error', t0, recv, why.slice(0, 200));
      return;
    }
    this.countMessage('ok', recv);
    if (this.markets.get(ticker)?.status !== ACTIVE) return; // closed while we waited: not live
    if (this.gapOpen(key)) this.closeGap(key, recv);
    this.lastGood.set(ticker, recv);
    this.books++;
    await this.deps.sink.append(key, obs[0], { checkpoint: true });
  }
}

export const yesnoKind: RecorderKind = {
  kind: 'yesno',
  create: (deps) => new YesNoRecorder(deps),
};
