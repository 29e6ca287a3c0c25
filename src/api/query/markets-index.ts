// The catalogue cache: the newest catalogue event of every market per family, refreshed from the
// catalog logs at most once a second. Resolves a path id (market id, condition id, slug, topic id
// or ticker) to its market, and lists markets stably: ordered by first capture, then id, so
// markets listed later always sort after a cursor.
//
// A refresh re-reads only the markets whose catalog log changed, and finds them without a file
// system call per market: folder watches (catalog-watch.ts) report the markets whose logs were
// written in the last two UTC days, and every other market is stamped (storage's `logStamp`: a
// listing of its folder and one stat, compared with the stamp taken when it was last read) only
// when its periodic check is due, every RECHECK_MS: the cost of a refresh follows the markets that
// changed, not the markets known (`npm run bench -- markets` compares the three ways; docs/api.md).
//
// Safety nets: a market is stamped at least every RECHECK_MS whatever its watch says (file systems
// that report no events), a recent market whose watch could not be set is stamped every refresh,
// and each refresh re-reads a rolling 1/FULL_ROUNDS of the recent markets whatever their stamp
// (file systems whose metadata lags their contents), so each of those is read again at least every
// five minutes or so under load.

import { logStamp, openReader, parquetStamp, sameStamp } from '../../storage/index.js';
import type { LogReader, LogStamp } from '../../storage/index.js';
import type { Market } from '../../schema/market.js';
import type { CatalogEvent, Family, Recorded } from '../../schema/observation.js';
import { utcDay } from '../../schema/time.js';
import { familyOf } from '../../families/registry.js';
import { CatalogWatch } from './catalog-watch.js';

/** Markets stamped or read at once in a refresh (file system calls wait on the thread pool). */
const REFRESH_CONCURRENCY = 32;
/** Every recent market is re-read regardless of its stamp at least once per this many refreshes. */
const FULL_ROUNDS = 300;
/** Every market is stamped at least this often (ms) whatever its watch says; listings are redone too. */
export const RECHECK_MS = 30_000;
const DAY_MS = 86_400_000;

/** What a refresh looks at (see `MarketsIndex.rebuild`). */
export type RefreshMode = 'changed' | 'stamp' | 'read';

export interface IndexedMarket {
  readonly market: Market;
  /** Receive time of the market's first catalogue event: the listing order. */
  readonly first_ts: number;
  readonly last_seq: number;
  /** The catalog log's stamp, taken before that event was read. */
  readonly stamp: LogStamp;
}

interface FamilyIndex {
  at: number;
  byId: Map<string, IndexedMarket>;
  alias: Map<string, string>;
  sorted: IndexedMarket[];
  /** Markets with a books log (yes/no tickers may have books before catalogue data). */
  withBooks: Set<string>;
  /** The listings these were built from (the watch hands back the same arrays while unchanged). */
  ids: readonly string[];
  bookIds: readonly string[];
  /** The stream's Parquet stamp when built: a publication has every market stamped again. */
  parquet: string;
  /** When each market was last stamped (its periodic check is due RECHECK_MS later). */
  stampedAt: Map<string, number>;
}

export class MarketsIndex {
  private readonly families = new Map<Family, FamilyIndex>();
  private readonly loading = new Map<Family, Promise<FamilyIndex>>();
  private readonly readers = new Map<string, LogReader>();
  /** Refreshes so far per family (picks the rolling share of markets re-read whatever their stamp). */
  private readonly rounds = new Map<Family, number>();
  /** Markets whose newest catalogue event the last refresh read (tests and the benchmark). */
  lastReads = 0;
  /** Markets whose catalog log the last refresh stamped: its file system calls (tests and the benchmark). */
  lastStamps = 0;
  private readonly watch: CatalogWatch;

  /**
   * `now` is the clock of the view's age and of the periodic checks (tests); `maxWatches` the most
   * market folders watched at once (inotify watches; past it, recent markets are stamped each refresh).
   */
  constructor(
    private readonly dataDir: string,
    private readonly ttlMs = 1000,
    private readonly now: () => number = Date.now,
    opts: { readonly maxWatches?: number } = {},
  ) {
    this.watch = new CatalogWatch(dataDir, opts.maxWatches);
  }

  /** Market folders watched now (tests, the benchmark). */
  get watched(): number {
    return this.watch.watched;
  }

  /** Ends the folder watches (server shutdown). */
  close(): void {
    this.watch.close();
  }

  /** One reader per log, kept (readers are cheap handles; they open files per read). */
  async reader(family: Family, stream: 'books' | 'metrics' | 'catalog', market: string): Promise<LogReader> {
    const id = `${family}\u0000${stream}\u0000${market}`;
    const hit = this.readers.get(id);
    if (hit) return hit;
    const r = openReader(this.dataDir, { family, stream, market });
    if (this.readers.size >= 5000) this.readers.delete(this.readers.keys().next().value as string);
    this.readers.set(id, r);
    return r;
  }

  private async refresh(family: Family, prev: FamilyIndex | undefined, mode: RefreshMode): Promise<FamilyIndex> {
    // Taken first: a change reported while this refresh runs is kept for the next one.
    const changed = this.watch.takeChanged(family);
    try {
      return await this.refreshWith(family, prev, mode, changed);
    } catch (e) {
      this.watch.restore(family, changed); // not lost with the failed refresh
      throw e;
    }
  }

  private async refreshWith(
    family: Family,
    prev: FamilyIndex | undefined,
    mode: RefreshMode,
    changed: ReadonlySet<string>,
  ): Promise<FamilyIndex> {
    const now = this.now();
    const [ids, bookIds, parquet] = await Promise.all([
      this.watch.markets(family, 'catalog', now, RECHECK_MS),
      this.watch.markets(family, 'books', now, RECHECK_MS),
      parquetStamp(this.dataDir, family, 'catalog'),
    ]);
    const round = this.rounds.get(family) ?? 0;
    this.rounds.set(family, round + 1);
    // A publication changes every market's stamp (what is served from Parquet may have changed).
    const stampAll = mode !== 'changed' || prev === undefined || prev.parquet !== parquet;
    // Markets with a day file since yesterday (UTC) still change: they are watched, and they are
    // the ones the rolling re-read covers (a quiet market has no recent write for metadata to lag).
    const since = utcDay(now - DAY_MS);
    const recent = (s: LogStamp): boolean => s.day !== null && s.day >= since;
    const stampedAt = prev?.stampedAt ?? new Map<string, number>();
    const live = this.watch.of(family);
    // Markets needing a file system call, and whether their newest event is read whatever the stamp.
    const todo: { i: number; force: boolean }[] = [];
    for (let i = 0; i < ids.length; i++) {
      const id = ids[i];
      const old = stampAll ? undefined : prev.byId.get(id);
      if (old === undefined) {
        todo.push({ i, force: mode === 'read' });
        continue;
      }
      const at = stampedAt.get(id);
      const isRecent = recent(old.stamp);
      const rolling = isRecent && i % FULL_ROUNDS === round % FULL_ROUNDS;
      // Nothing to do without a file system call: checked lately, not reported, and either watched
      // or quiet for two days (a new event would make a new day file: its periodic check sees it).
      if (rolling || at === undefined || now - at >= RECHECK_MS || changed.has(id) || (isRecent && live.get(id)?.live !== true))
        todo.push({ i, force: rolling });
    }
    const updates = new Map<string, IndexedMarket | undefined>();
    const checked: [string, number][] = [];
    let reads = 0;
    const one = async ({ i, force }: { i: number; force: boolean }): Promise<void> => {
      const id = ids[i];
      const old = prev?.byId.get(id);
      const key = { family, stream: 'catalog' as const, market: id };
      let stamp = await logStamp(this.dataDir, key, parquet);
      if (recent(stamp)) {
        // Watch, then stamp again: a change after this stamp is reported, one before it is in it.
        if (!this.watch.watching(family, id) && this.watch.watch(family, id)) stamp = await logStamp(this.dataDir, key, parquet);
      } else if (this.watch.watching(family, id)) this.watch.unwatch(family, id); // frees it for a live market
      // Due again in RECHECK_MS / 2 to RECHECK_MS, by position: the checks stay spread over time.
      checked.push([id, now - (i % 32) * (RECHECK_MS / 64)]);
      const { e, read } = await this.entry(family, id, old, stamp, force);
      if (read) reads++;
      if (e !== old) updates.set(id, e);
    };
    for (let k = 0; k < todo.length; k += REFRESH_CONCURRENCY) await Promise.all(todo.slice(k, k + REFRESH_CONCURRENCY).map(one));
    this.lastStamps = todo.length;
    this.lastReads = reads;
    // Only now (the refresh did not fail): a market counts as checked once its entry is in the view.
    for (const [id, at] of checked) stampedAt.set(id, at);
    if (prev && ids !== prev.ids) {
      const listed = new Set(ids);
      for (const id of stampedAt.keys()) if (!listed.has(id)) stampedAt.delete(id);
    }
    const withBooks = prev && bookIds === prev.bookIds ? prev.withBooks : new Set(bookIds);
    const base = { withBooks, ids, bookIds, parquet, stampedAt };
    const kept = prev && ids === prev.ids ? this.patched(prev, updates) : null;
    // `at` last: a kept view is spread first, and its age must start again now.
    return { ...(kept ?? this.built(ids, (id) => (updates.has(id) ? updates.get(id) : prev?.byId.get(id)))), ...base, at: this.now() };
  }

  /**
   * The previous view with some entries replaced, without a sort, when that is all that changed:
   * the same markets listed, each replaced entry keeping its first capture (so its place) and its
   * aliases. Null when a full build is needed.
   */
  private patched(
    prev: FamilyIndex,
    updates: ReadonlyMap<string, IndexedMarket | undefined>,
  ): Pick<FamilyIndex, 'byId' | 'alias' | 'sorted'> | null {
    if (updates.size === 0) return prev;
    for (const [id, e] of updates) {
      const old = prev.byId.get(id);
      if (!e || !old || e.first_ts !== old.first_ts) return null;
      const d = familyOf(e.market.family);
      const a = d.aliases(e.market);
      const b = d.aliases(old.market);
      if (a.length !== b.length || a.some((n, k) => n !== b[k])) return null;
    }
    const byId = new Map(prev.byId);
    const replaced = new Map<IndexedMarket, IndexedMarket>();
    for (const [id, e] of updates) {
      replaced.set(prev.byId.get(id)!, e!);
      byId.set(id, e!);
    }
    const sorted = prev.sorted.map((e) => replaced.get(e) ?? e);
    return { byId, alias: prev.alias, sorted };
  }

  /** The view from scratch: in id order, as one market after the other made it. */
  private built(
    ids: readonly string[],
    entryOf: (id: string) => IndexedMarket | undefined,
  ): Pick<FamilyIndex, 'byId' | 'alias' | 'sorted'> {
    const byId = new Map<string, IndexedMarket>();
    for (const id of ids) {
      const e = entryOf(id);
      if (e) byId.set(id, e);
    }
    // An alias two markets claim goes to the later id.
    const alias = new Map<string, string>();
    for (const [id, m] of byId) {
      for (const n of familyOf(m.market.family).aliases(m.market)) if (n && !byId.has(n)) alias.set(n, id);
    }
    const sorted = [...byId.values()].sort(
      (a, b) => a.first_ts - b.first_ts || (a.market.market_id < b.market.market_id ? -1 : a.market.market_id > b.market.market_id ? 1 : 0),
    );
    return { byId, alias, sorted };
  }

  /** The market's entry for `stamp`: the old one when nothing changed, else from its newest event. */
  private async entry(
    family: Family,
    id: string,
    old: IndexedMarket | undefined,
    stamp: LogStamp,
    force: boolean,
  ): Promise<{ e: IndexedMarket | undefined; read: boolean }> {
    if (old && !force && sameStamp(old.stamp, stamp)) return { e: old, read: false };
    const r = await this.reader(family, 'catalog', id);
    const last = await r.latest();
    if (!last || last.rec.type !== 'catalog') return { e: old, read: true };
    if (old && old.last_seq === last.rec.seq) return { e: sameStamp(old.stamp, stamp) ? old : { ...old, stamp }, read: true };
    const first = old ? old.first_ts : ((await r.first())?.rec.recv_ts ?? last.rec.recv_ts);
    const ev = last.rec as Recorded<CatalogEvent>;
    return { e: { market: ev.market, first_ts: first, last_seq: ev.seq, stamp }, read: true };
  }

  async get(family: Family): Promise<FamilyIndex> {
    const cur = this.families.get(family);
    const age = cur ? this.now() - cur.at : Infinity;
    if (cur && age <= this.ttlMs) return cur;
    const p = this.loading.get(family) ?? this.run(family, 'changed');
    // A view a few seconds old is served while the refresh runs, so the once-a-second re-read of a
    // large catalogue never stalls requests; an older (or no) view waits for the fresh one.
    if (cur && age <= this.ttlMs * 5) {
      p.catch(() => undefined);
      return cur;
    }
    return p;
  }

  /**
   * Re-reads the family's catalogue now and returns how many markets it holds. `serve` does this
   * last before it listens: a view built before a long warm-up would be past its TTL at the first
   * request, which would then run beside the re-read of every market's catalogue. `mode`: what a
   * refresh looks at, `changed` (the markets the watches and due checks name: what every refresh
   * does), `stamp` (every market's stamp, as every refresh did before watches) or `read` (every
   * market's newest event, as before stamps); the last two are the benchmark's baselines.
   */
  async rebuild(family: Family, mode: RefreshMode = 'changed'): Promise<number> {
    return (await this.run(family, mode)).sorted.length;
  }

  /**
   * A refresh of the family, after the one running (if any): two at once would each take part of
   * the reported changes, and the one finishing last would set a view without the other's.
   */
  private run(family: Family, mode: RefreshMode): Promise<FamilyIndex> {
    const before = this.loading.get(family);
    const p: Promise<FamilyIndex> = (async () => {
      if (before) await before.catch(() => undefined);
      const idx = await this.refresh(family, this.families.get(family), mode);
      this.families.set(family, idx);
      return idx;
    })().finally(() => {
      if (this.loading.get(family) === p) this.loading.delete(family);
    });
    this.loading.set(family, p);
    return p;
  }

  /** The market a path id names (market id, condition id, slug, topic id), or null. */
  async resolve(family: Family, pathId: string): Promise<IndexedMarket | null> {
    const idx = await this.get(family);
    const id = idx.byId.has(pathId) ? pathId : idx.alias.get(pathId);
    return id === undefined ? null : (idx.byId.get(id) ?? null);
  }

  /**
   * `resolve` from the cached view without a promise: the market, null when the view does not know
   * the id, undefined when there is no view or it is too old to answer (use `resolve`). A view past
   * its TTL but young enough for `get` to answer is used the same way: the re-read starts in the
   * background, so requests arriving while it runs stay on the caller's fast path.
   */
  resolveNow(family: Family, pathId: string): IndexedMarket | null | undefined {
    const idx = this.families.get(family);
    if (idx === undefined) return undefined;
    const age = this.now() - idx.at;
    if (age > this.ttlMs * 5) return undefined;
    if (age > this.ttlMs) this.get(family).catch(() => undefined); // answers `idx` itself meanwhile
    const id = idx.byId.has(pathId) ? pathId : idx.alias.get(pathId);
    return id === undefined ? null : (idx.byId.get(id) ?? null);
  }

  /** True when the family has a books log for this exact market id. */
  async hasBooks(family: Family, marketId: string): Promise<boolean> {
    return (await this.get(family)).withBooks.has(marketId);
  }

  async list(family: Family): Promise<readonly IndexedMarket[]> {
    return (await this.get(family)).sorted;
  }
}
