// The catalogue cache: the newest catalogue event of every market per family, refreshed from the
// catalog logs at most once a second. Resolves a path id (market id, condition id, slug, topic id
// or ticker) to its market, and lists markets stably: ordered by first capture, then id, so
// markets listed later always sort after a cursor.
//
// A refresh re-reads only the markets whose catalog log changed: each market's log stamp (a listing
// of its folder and one stat, storage's `logStamp`) is compared with the one taken when it was last
// read. Measured with 2,000 markets (`npm run bench -- markets`): a refresh that reads every
// market's newest event took 0.4 – 0.6 s of CPU; one that stamps them, about 62 ms (docs/api.md).
// As a safety net against a file system whose metadata lags its contents (attribute caching on
// network mounts), each refresh also re-reads a rolling 1/FULL_ROUNDS of the markets whatever their
// stamp, so every market is read again at least every five minutes or so under load.

import { listMarkets, logStamp, openReader, parquetStamp, sameStamp } from '../../storage/index.js';
import type { LogReader, LogStamp } from '../../storage/index.js';
import type { Market } from '../../schema/market.js';
import type { CatalogEvent, Family, Recorded } from '../../schema/observation.js';
import { familyOf } from '../../families/index.js';

/** Markets stamped or read at once in a refresh (file system calls wait on the thread pool). */
const REFRESH_CONCURRENCY = 32;
/** Every market is re-read regardless of its stamp at least once per this many refreshes. */
const FULL_ROUNDS = 300;

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
}

export class MarketsIndex {
  private readonly families = new Map<Family, FamilyIndex>();
  private readonly loading = new Map<Family, Promise<FamilyIndex>>();
  private readonly readers = new Map<string, LogReader>();
  /** Refreshes so far per family (picks the rolling share of markets re-read whatever their stamp). */
  private readonly rounds = new Map<Family, number>();
  /** Markets whose newest catalogue event the last refresh read (tests and the benchmark). */
  lastReads = 0;

  /** `now` is the clock of the view's age (tests). */
  constructor(private readonly dataDir: string, private readonly ttlMs = 1000, private readonly now: () => number = Date.now) {}

  /** One reader per log, kept (readers are cheap handles; they open files per read). */
  async reader(family: Family, stream: 'books' | 'metrics' | 'catalog', market: string): Promise<LogReader> {
    const id = `${family}\u0000${stream}\u0000${market}`;
    const hit = this.readers.get(id);
    if (hit) return hit;
    // `await` keeps this working whether openReader is sync or async (Parquet spanning may make it so).
    const r = await openReader(this.dataDir, { family, stream, market });
    if (this.readers.size >= 5000) this.readers.delete(this.readers.keys().next().value as string);
    this.readers.set(id, r);
    return r;
  }

  private async refresh(family: Family, prev: FamilyIndex | undefined, full = false): Promise<FamilyIndex> {
    const [ids, parquet] = await Promise.all([listMarkets(this.dataDir, family, 'catalog'), parquetStamp(this.dataDir, family, 'catalog')]);
    const round = this.rounds.get(family) ?? 0;
    this.rounds.set(family, round + 1);
    const entries: (IndexedMarket | undefined)[] = new Array(ids.length);
    let reads = 0;
    const one = async (id: string, i: number): Promise<void> => {
      const old = prev?.byId.get(id);
      const stamp = await logStamp(this.dataDir, { family, stream: 'catalog', market: id }, parquet);
      const rolling = i % FULL_ROUNDS === round % FULL_ROUNDS;
      if (old && !full && !rolling && sameStamp(old.stamp, stamp)) {
        entries[i] = old;
        return;
      }
      reads++;
      const r = await this.reader(family, 'catalog', id);
      const last = await r.latest();
      if (!last || last.rec.type !== 'catalog') {
        entries[i] = old;
        return;
      }
      if (old && old.last_seq === last.rec.seq) {
        entries[i] = { ...old, stamp };
        return;
      }
      const first = old ? old.first_ts : ((await r.first())?.rec.recv_ts ?? last.rec.recv_ts);
      const ev = last.rec as Recorded<CatalogEvent>;
      entries[i] = { market: ev.market, first_ts: first, last_seq: ev.seq, stamp };
    };
    for (let k = 0; k < ids.length; k += REFRESH_CONCURRENCY) {
      await Promise.all(ids.slice(k, k + REFRESH_CONCURRENCY).map((id, j) => one(id, k + j)));
    }
    this.lastReads = reads;
    // In id order, as one market after the other made it (an alias two markets claim goes to the later id).
    const byId = new Map<string, IndexedMarket>();
    ids.forEach((id, i) => {
      const e = entries[i];
      if (e) byId.set(id, e);
    });
    const alias = new Map<string, string>();
    for (const [id, m] of byId) {
      for (const n of familyOf(m.market.family).aliases(m.market)) if (n && !byId.has(n)) alias.set(n, id);
    }
    const sorted = [...byId.values()].sort((a, b) => a.first_ts - b.first_ts || (a.market.market_id < b.market.market_id ? -1 : a.market.market_id > b.market.market_id ? 1 : 0));
    const withBooks = new Set(await listMarkets(this.dataDir, family, 'books'));
    return { at: this.now(), byId, alias, sorted, withBooks };
  }

  async get(family: Family): Promise<FamilyIndex> {
    const cur = this.families.get(family);
    const age = cur ? this.now() - cur.at : Infinity;
    if (cur && age <= this.ttlMs) return cur;
    let p = this.loading.get(family);
    if (!p) {
      p = this.refresh(family, cur)
        .then((idx) => {
          this.families.set(family, idx);
          return idx;
        })
        .finally(() => this.loading.delete(family));
      this.loading.set(family, p);
    }
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
   * request, which would then run beside the re-read of every market's catalogue. `full` reads
   * every market's newest event whatever its stamp (what every refresh did before stamps: the
   * benchmark's baseline).
   */
  async rebuild(family: Family, full = false): Promise<number> {
    const idx = await this.refresh(family, this.families.get(family), full);
    this.families.set(family, idx);
    return idx.sorted.length;
  }

  /** The market a path id names (market id, condition id, slug, topic id), or null. */
  async resolve(family: Family, pathId: string): Promise<IndexedMarket | null> {
    const idx = await this.get(family);
    const id = idx.byId.has(pathId) ? pathId : idx.alias.get(pathId);
    return id === undefined ? null : idx.byId.get(id) ?? null;
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
    return id === undefined ? null : idx.byId.get(id) ?? null;
  }

  /** True when the family has a books log for this exact market id. */
  async hasBooks(family: Family, marketId: string): Promise<boolean> {
    return (await this.get(family)).withBooks.has(marketId);
  }

  async list(family: Family): Promise<readonly IndexedMarket[]> {
    return (await this.get(family)).sorted;
  }
}
