// Push notices for the catalogue view (markets-index.ts): which markets' catalog logs changed since
// the last refresh, and the stream folders' listings, without a file system call per market.
//
// Why: a refresh that stamps every market's catalog log (a listing of its folder and one stat)
// grows with every market ever recorded, since market folders are never removed, and `serve` runs
// one every second while requests need the view (`npm run bench -- markets`). With watches, a refresh
// touches only the markets a watch reported, the unwatched markets due for their periodic check,
// and a listing whose folder changed.
//
// What is watched: the catalog folder of every market whose log was written in the last two UTC
// days (the markets that still change), up to `maxMarkets` folders, and the stream folders (a new
// market is a new folder there). Older markets are not watched: a new event for one of them makes
// a new day file, which its periodic check sees. A watch is a hint, never the only guarantee: every
// market is stamped again at least every `recheckMs` whatever the watches say (file systems that
// report no events, such as network mounts written by another host).

import type { Family, StreamName } from '../../schema/observation.js';
import { LogChanges, listMarkets, streamDir, type LogChangeSubscription } from '../../storage/index.js';

interface Listing {
  ids: readonly string[];
  at: number;
  sub: LogChangeSubscription | null;
  changed: boolean;
}

export class CatalogWatch {
  private readonly changes: LogChanges;
  /** Per family, per market: the watch of its catalog folder. */
  private readonly subs = new Map<Family, Map<string, LogChangeSubscription>>();
  private readonly changed = new Map<Family, Set<string>>();
  private readonly listings = new Map<string, Listing>();

  /** `maxMarkets`: the most market folders watched at once (each is one inotify watch). */
  constructor(
    private readonly dataDir: string,
    private readonly maxMarkets = 4096,
  ) {
    // The stream folders' watches come on top of the markets' (a few: one per family and stream).
    this.changes = new LogChanges(dataDir, maxMarkets + 16);
  }

  /** Market folders watched now (tests and the benchmark). */
  get watched(): number {
    let n = 0;
    for (const m of this.subs.values()) n += m.size;
    return n;
  }

  /** The family's watches by market (a refresh's loop over every market looks them up here). */
  of(family: Family): ReadonlyMap<string, LogChangeSubscription> {
    let m = this.subs.get(family);
    if (!m) this.subs.set(family, (m = new Map<string, LogChangeSubscription>()));
    return m;
  }

  /** True while a live watch covers the market's catalog folder. */
  watching(family: Family, id: string): boolean {
    return this.subs.get(family)?.get(id)?.live === true;
  }

  /**
   * Starts watching the market's catalog folder; false when no watch could be set (limit, refusal).
   * Call it before stamping the log: a change after the stamp is then reported, one before is in it.
   */
  watch(family: Family, id: string): boolean {
    const subs = this.of(family) as Map<string, LogChangeSubscription>;
    const old = subs.get(id);
    if (old?.live) return true;
    old?.close();
    subs.delete(id);
    if (this.watched >= this.maxMarkets) return false;
    const sub = this.changes.subscribe({ family, stream: 'catalog', market: id }, () => this.changedOf(family).add(id));
    if (sub === null) return false;
    subs.set(id, sub);
    return true;
  }

  /** Stops watching a market (its log went quiet): frees the watch for markets that still change. */
  unwatch(family: Family, id: string): void {
    const subs = this.subs.get(family);
    subs?.get(id)?.close();
    subs?.delete(id);
  }

  private changedOf(family: Family): Set<string> {
    let s = this.changed.get(family);
    if (!s) this.changed.set(family, (s = new Set()));
    return s;
  }

  /** The markets a watch reported since the last call (a watch that ended reports its market too). */
  takeChanged(family: Family): ReadonlySet<string> {
    const s = this.changed.get(family);
    this.changed.delete(family);
    return s ?? new Set();
  }

  /** Reports these markets again (a refresh that took them failed before it looked). */
  restore(family: Family, ids: ReadonlySet<string>): void {
    if (ids.size === 0) return;
    const s = this.changedOf(family);
    for (const id of ids) s.add(id);
  }

  /**
   * The stream's market ids (sorted). The same array as last time unless the stream folder
   * reported a change, its watch is gone, or `maxAgeMs` passed since it was listed.
   */
  async markets(family: Family, stream: StreamName, now: number, maxAgeMs: number): Promise<readonly string[]> {
    const key = `${family}\u0000${stream}`;
    const cur = this.listings.get(key);
    if (cur && !cur.changed && cur.sub?.live && now - cur.at < maxAgeMs) return cur.ids;
    cur?.sub?.close();
    // Watch first, then list: a folder created after the listing is reported, one before is listed.
    const next: Listing = { ids: [], at: now, sub: null, changed: false };
    next.sub = this.changes.subscribeDir(streamDir(this.dataDir, family, stream), () => void (next.changed = true));
    next.ids = await listMarkets(this.dataDir, family, stream);
    // Unchanged content keeps the very array, so callers can tell "nothing new" by identity.
    if (cur && cur.ids.length === next.ids.length && cur.ids.every((id, i) => id === next.ids[i])) next.ids = cur.ids;
    this.listings.set(key, next);
    return next.ids;
  }

  /** Ends every watch (server shutdown). */
  close(): void {
    this.changes.close();
    this.subs.clear();
    this.listings.clear();
  }
}
