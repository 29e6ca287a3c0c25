// What the recorders say about themselves: every record process rewrites
// `<dataDir>/status/record-<pid>.json` every ~2 s. The read side uses these files for `stale` on
// latest books, live coverage and `/healthz`; a file older than 10 s belongs to a dead process.

import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Family } from '../../schema/observation.js';

export interface RecorderStatus {
  readonly pid: number;
  readonly updated_ts: number;
  /** Per upstream kind, whatever the recorder reports (last write, lag, connected...). */
  readonly kinds: Record<string, Record<string, unknown>>;
  /** Market ids (tickers for yes/no) with a live upstream subscription, per family. */
  readonly connected: Partial<Record<Family, string[]>>;
  readonly alive: boolean;
  /** Writers paused by the disk and records they dropped (zeros for files that do not say). */
  readonly storage: { readonly paused_writers: number; readonly dropped_records: number; readonly free_bytes: number | null };
}

const count = (v: unknown): number => (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 ? v : 0);

function storageOf(raw: unknown): RecorderStatus['storage'] {
  const o = (raw && typeof raw === 'object' ? raw : {}) as Record<string, unknown>;
  const free = typeof o.free_bytes === 'number' && Number.isFinite(o.free_bytes) ? o.free_bytes : null;
  return { paused_writers: count(o.paused_writers), dropped_records: count(o.dropped_records), free_bytes: free };
}

export const STATUS_DEAD_AFTER_MS = 10_000;

export class StatusBoard {
  private cache: { at: number; list: RecorderStatus[]; live: Map<Family, Set<string>> } | null = null;
  private loading: Promise<void> | null = null;

  /** `now` is the clock of the view's age and of recorder liveness (tests). */
  constructor(
    private readonly dataDir: string,
    private readonly ttlMs = 1000,
    private readonly now: () => number = Date.now,
  ) {}

  private async load(): Promise<void> {
    const dir = join(this.dataDir, 'status');
    const names = await readdir(dir).catch(() => [] as string[]);
    const now = this.now();
    const list: RecorderStatus[] = [];
    const live = new Map<Family, Set<string>>();
    for (const name of names) {
      if (!/^record-\d+\.json$/.test(name)) continue;
      try {
        const raw = JSON.parse(await readFile(join(dir, name), 'utf8')) as Partial<RecorderStatus>;
        const updated = Number(raw.updated_ts);
        if (!Number.isFinite(updated)) continue;
        const alive = now - updated <= STATUS_DEAD_AFTER_MS;
        const connected = raw.connected && typeof raw.connected === 'object' ? raw.connected : {};
        const kinds = raw.kinds && typeof raw.kinds === 'object' ? raw.kinds : {};
        list.push({ pid: Number(raw.pid), updated_ts: updated, kinds, connected, alive, storage: storageOf(raw.storage) });
        if (!alive) continue;
        for (const [family, ids] of Object.entries(connected)) {
          if (!Array.isArray(ids)) continue;
          let set = live.get(family as Family);
          if (!set) live.set(family as Family, (set = new Set()));
          for (const id of ids) if (typeof id === 'string') set.add(id);
        }
      } catch {
        // A file being rewritten or damaged: skip it this round.
      }
    }
    this.cache = { at: now, list, live };
  }

  private async fresh(): Promise<NonNullable<StatusBoard['cache']>> {
    const age = this.cache ? this.now() - this.cache.at : Infinity;
    if (age > this.ttlMs) {
      this.loading ??= this.load().finally(() => (this.loading = null));
      // A view a few seconds old is answered while the folder is re-read (as MarketsIndex does), so
      // no request waits for the reload; an older (or no) view waits for the fresh one. Recorders
      // count as dead after 10 s without an update, so a few seconds more change nothing that matters.
      if (age <= this.ttlMs * 5) {
        this.loading.catch(() => undefined);
        return this.cache!;
      }
      await this.loading;
    }
    return this.cache!;
  }

  /** True when a live record process holds an upstream subscription for the market. */
  async isConnected(family: Family, market: string): Promise<boolean> {
    return (await this.fresh()).live.get(family)?.has(market) ?? false;
  }

  /**
   * `isConnected` without a promise, from the view `isConnected` would answer now: undefined when
   * it would wait (no view, or one too old). A view past its TTL starts the re-read in the background.
   */
  connectedNow(family: Family, market: string): boolean | undefined {
    const c = this.cache;
    if (c === null) return undefined;
    const age = this.now() - c.at;
    if (age > this.ttlMs * 5) return undefined;
    if (age > this.ttlMs) this.fresh().catch(() => undefined);
    return c.live.get(family)?.has(market) ?? false;
  }

  async all(): Promise<RecorderStatus[]> {
    return (await this.fresh()).list;
  }
}
