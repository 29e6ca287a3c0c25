// catalog feed (transport, per shared/venues/clob.md "catalog REST"): polls the events of each
// configured coin × window series within [now − resolve horizon, now + lookahead], writes one
// catalogue event per change of a market (unchanged polls write nothing), and fills the coin
// directory the clob recorder follows. Rate budget, 429 and 5xx handling come from RestClient.
// With coin discovery on (config `"coins": "all"`), active events are listed now and then and
// every coin with an up/down series in a configured window joins the polled coins.

import type { CoinMarket } from '../../schema/market.js';
import type { LogKey } from '../../storage/index.js';
import { Recorder, type RecorderDeps, RecorderError } from '../recorder.js';
import { RestClient } from '../rest.js';
import { sleep } from '../backoff.js';
import { coinDirectory, type CoinDirectory } from './directory.js';
import { COIN_CATALOG, marketsIn, normalizeCatalogMarket, upDownOf } from './normalize.js';
import { catalogChange, UnwrittenCatalog } from '../catalog-diff.js';
import type { RecorderKind } from '../recorder.js';

export const catalogKey = (marketId: string): LogKey => ({ family: 'coin', stream: 'catalog', market: marketId });

const WINDOW_MS: Record<string, number> = { '5m': 300_000, '15m': 900_000, '1h': 3_600_000, '4h': 14_400_000 };
/** Discovery lists active events every this many polls (the first poll included)... */
const DISCOVER_EVERY_POLLS = 12;
/** ...reading at most this many pages of 100: a busy catalogue must not eat the rate budget. */
const DISCOVER_MAX_PAGES = 20;

export class CatalogRecorder extends Recorder {
  readonly kind = 'catalog';
  readonly family = 'coin' as const;
  private readonly rest: RestClient;
  private readonly directory: CoinDirectory;
  private readonly known = new Map<string, CoinMarket>();
  private readonly unwritten = new UnwrittenCatalog();
  private readonly abort = new AbortController();
  private loop: Promise<void> | null = null;
  private lastOkTs = 0;
  polls = 0;
  /** Coins found by discovery beyond config `coins` (in order of discovery). */
  readonly discovered = new Set<string>();

  constructor(deps: RecorderDeps) {
    super(deps);
    const up = deps.config.upstreams.catalog;
    this.directory = coinDirectory(deps);
    this.rest = new RestClient({
      baseUrl: up.rest ?? '',
      ratePerS: up.rate_per_s ?? 5,
      signal: this.abort.signal,
      onAttemptError: (e) => this.reportError(e.code, e.message),
    });
  }

  async start(): Promise<void> {
    if (!this.deps.config.upstreams.catalog.rest) throw new Error('config: upstreams.catalog.rest is required for the catalog recorder');
    // start() waits (briefly) for the first poll so the clob recorder starts with markets, but
    // an unreachable upstream must not hold up the process: the loop keeps trying.
    let first!: () => void;
    const firstPoll = new Promise<void>((r) => (first = r));
    this.loop = this.run(first);
    await Promise.race([firstPoll, sleep(3000)]);
  }

  async stop(): Promise<void> {
    this.stopping = true;
    this.abort.abort();
    await this.loop;
  }

  isConnected(): boolean {
    return Date.now() - this.lastOkTs <= 3 * this.deps.config.recorders.catalogPollMs + 10_000;
  }

  connectedMarkets(): string[] {
    return [];
  }

  private async run(firstDone: () => void): Promise<void> {
    const poll = (): Promise<void> =>
      this.pollOnce().catch((e: unknown) => this.reportError('internal', `poll failed: ${(e as Error).message}`));
    await poll();
    firstDone();
    while (!this.stopping) {
      await sleep(this.deps.config.recorders.catalogPollMs, this.abort.signal);
      if (this.stopping) break;
      await poll();
    }
  }

  /** One poll of every series; errors are reported and the next poll tries again. */
  async pollOnce(): Promise<void> {
    const cfg = this.deps.config;
    const now = Date.now();
    let ok = true;
    if (cfg.discoverCoins && this.polls % DISCOVER_EVERY_POLLS === 0) ok = await this.discover(now);
    for (const coin of [...cfg.coins, ...this.discovered]) {
      for (const w of cfg.windows) {
        if (this.stopping) return;
        const span = WINDOW_MS[w] ?? 900_000;
        try {
          for (let offset = 0; offset < 2000; offset += 100) {
            const body = await this.rest.getJson('/events', {
              series_slug: `${coin}-up-or-down-${w}`,
              end_date_min: new Date(now - cfg.recorders.resolveHorizonMs).toISOString(),
              end_date_max: new Date(now + cfg.recorders.lookaheadMs + span).toISOString(),
              limit: 100,
              offset,
            });
            const n = Array.isArray(body) ? body.length : 0;
            await this.ingest(body, Date.now());
            if (n < 100) break;
          }
        } catch (e) {
          ok = false;
          if (!(e instanceof RecorderError)) this.reportError('internal', (e as Error).message);
        }
      }
    }
    this.polls++;
    if (ok) this.lastOkTs = Date.now();
    // Forget markets long past their resolution horizon (their logs keep the final state).
    for (const [id, m] of this.known) {
      if (m.end_time !== null && m.end_time < now - 2 * cfg.recorders.resolveHorizonMs) {
        this.known.delete(id);
        this.unwritten.forget(id);
        this.directory.delete(id);
        void this.deps.sink.closeKey(catalogKey(id));
      }
    }
  }

  /** Lists active events ending soon; coins with an up/down series in a configured window join the
   *  polled coins. Returns false when the listing failed (the next discovery tries again). */
  private async discover(now: number): Promise<boolean> {
    const cfg = this.deps.config;
    const span = Math.max(...cfg.windows.map((w) => WINDOW_MS[w] ?? 900_000));
    try {
      for (let page = 0; page < DISCOVER_MAX_PAGES && !this.stopping; page++) {
        const body = await this.rest.getJson('/events', {
          active: true,
          closed: false,
          end_date_min: new Date(now).toISOString(),
          end_date_max: new Date(now + cfg.recorders.lookaheadMs + span).toISOString(),
          limit: 100,
          offset: page * 100,
        });
        if (!Array.isArray(body)) {
          this.reportError('malformed', 'events response is not an array');
          return false;
        }
        for (const raw of marketsIn(body)) {
          const ud = raw && typeof raw === 'object' ? upDownOf(raw) : null;
          if (!ud || !cfg.windows.includes(ud.window) || cfg.coins.includes(ud.coin) || this.discovered.has(ud.coin)) continue;
          this.discovered.add(ud.coin);
          this.deps.logger.info({ kind: this.kind, coin: ud.coin }, 'discovered a coin with up/down markets');
        }
        if (body.length < 100) break;
      }
      return true;
    } catch (e) {
      if (!(e instanceof RecorderError)) this.reportError('internal', (e as Error).message);
      return false;
    }
  }

  /** Normalizes a response body and records what changed. */
  private async ingest(body: unknown, recvTs: number): Promise<void> {
    const raws = marketsIn(body);
    if (!Array.isArray(body)) this.reportError('malformed', 'events response is not an array');
    for (const raw of raws) {
      const m = normalizeCatalogMarket(raw, recvTs);
      if (!m) {
        this.countMessage('ignored', recvTs);
        continue;
      }
      this.countMessage('ok', recvTs);
      if (!(this.deps.config.coins.includes(m.coin) || this.discovered.has(m.coin)) || !this.deps.inShard(m.market_id)) continue;
      await this.record(m, recvTs);
    }
  }

  private async record(m: CoinMarket, recvTs: number): Promise<void> {
    const key = catalogKey(m.market_id);
    let prev = this.unwritten.stale(m.market_id) ? null : (this.known.get(m.market_id) ?? null);
    if (!prev) {
      const last = await this.deps.sink.lastRecord(key);
      if (last?.type === 'catalog' && last.market.family === 'coin') prev = last.market;
    }
    const ev = catalogChange(COIN_CATALOG, prev, m, recvTs);
    this.known.set(m.market_id, m);
    if (!prev || ev) this.directory.upsert(m);
    if (!ev) return;
    const settled = m.status === 'resolved' || m.status === 'cancelled';
    void this.unwritten.append(this.deps.sink, key, ev).then((written) => {
      // Finished markets leave the poll window by themselves: free their writer once the final
      // state is in the log (not before: the next poll writes it again after a full disk).
      if (written && settled) void this.deps.sink.closeKey(key);
    });
  }
}

export const catalogKind: RecorderKind = {
  kind: 'catalog',
  create: (deps) => new CatalogRecorder(deps),
};
