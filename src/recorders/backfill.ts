// `pmtape backfill catalog`: lists a family's past and current markets since a date
// (./backfill-sources.ts) and appends one `catalog` event per market whose state differs from its
// log's last catalog record, so re-running, or running over recorded markets, writes nothing new.

import type { Config } from '../config.js';
import { LockedError } from '../errors.js';
import type { CatalogEvent, Family } from '../schema/observation.js';
import type { Market } from '../schema/market.js';
import { openWriter } from '../storage/index.js';
import { inShard } from './host.js';
import type { Source } from './backfill-sources.js';
import { familyOf } from '../families/registry.js';
import { backfillOf } from './venues.js';

/** Market logs written at once. */
const WRITERS = 8;

export interface BackfillOptions {
  readonly family: Family;
  /** Markets that ended before this time (epoch ms) are left out. */
  readonly since: number;
  /** One line per notable event (a locked market, a failed listing, a malformed item). */
  readonly log?: (line: string) => void;
  /** Called once per listing and once per market handled. */
  readonly onProgress?: (phase: 'list' | 'write', done: number, total: number) => void;
}

export interface BackfillSummary {
  readonly family: Family;
  readonly since: string;
  /** Distinct markets the listings returned (in this shard). */
  listed: number;
  /** Markets that got a catalog event. */
  written: number;
  /** Markets whose last catalog record already has this state. */
  unchanged: number;
  /** Markets held by a running recorder (it keeps them current). */
  skipped_locked: number;
  /** Markets belonging to another shard. */
  out_of_shard: number;
  /** Items the normalizers refused. */
  ignored: number;
  /** Markets whose log could not be opened or appended (other than locked). */
  failed: number;
  listings: number;
  failed_listings: number;
  /** Non-null when every listing failed: the one-line reason. */
  error: string | null;
}

export async function runBackfill(config: Config, opts: BackfillOptions): Promise<BackfillSummary> {
  const log = opts.log ?? (() => undefined);
  let malformed = 0;
  const src = backfillOf(familyOf(opts.family))(config, opts.since, (why) => {
    // Retried attempts and malformed items: a few lines, not a flood.
    if (++malformed <= 5) log(`upstream: ${why}`);
  });
  const sum: BackfillSummary = {
    family: opts.family,
    since: new Date(opts.since).toISOString(),
    listed: 0,
    written: 0,
    unchanged: 0,
    skipped_locked: 0,
    out_of_shard: 0,
    ignored: 0,
    failed: 0,
    listings: src.names.length,
    failed_listings: 0,
    error: null,
  };
  // List everything first: a market in two listings is written once, and the write phase has a total.
  const markets = new Map<string, Market>();
  let lastError = '';
  for (const [i, name] of src.names.entries()) {
    const l = await src.list(name);
    sum.ignored += l.ignored;
    if (l.error !== null) {
      sum.failed_listings++;
      lastError = `${name}: ${l.error}`;
      log(`listing ${name} failed${l.markets.length > 0 ? ` after ${l.markets.length} market(s)` : ''}: ${l.error}`);
    }
    for (const m of l.markets) {
      if (!inShard(m.market_id, config.shard)) sum.out_of_shard++;
      else markets.set(m.market_id, m);
    }
    opts.onProgress?.('list', i + 1, src.names.length);
  }
  sum.listed = markets.size;
  if (src.names.length > 0 && sum.failed_listings === src.names.length && markets.size === 0) {
    sum.error = `every upstream listing failed (last: ${lastError})`;
    return sum;
  }
  if (src.names.length === 0) {
    sum.error = `nothing to list: the config names no ${src.selection}`;
    return sum;
  }
  // A few markets at a time: each is its own log, so their fsyncs overlap.
  let done = 0;
  const queue = [...markets.values()];
  const worker = async (): Promise<void> => {
    for (let m = queue.shift(); m !== undefined; m = queue.shift()) {
      await writeOne(config, src, m, sum, log);
      opts.onProgress?.('write', ++done, markets.size);
    }
  };
  await Promise.all(Array.from({ length: Math.min(WRITERS, queue.length) }, worker));
  return sum;
}

async function writeOne(config: Config, src: Source, m: Market, sum: BackfillSummary, log: (line: string) => void): Promise<void> {
  const key = src.key(m);
  let w;
  try {
    w = await openWriter(config.dataDir, key, {
      fsyncIntervalMs: config.storage.fsyncIntervalMs,
      fsyncMaxRecords: config.storage.fsyncMaxRecords,
    });
  } catch (e) {
    if (e instanceof LockedError) {
      sum.skipped_locked++;
      log(`skipped ${key.family} market ${m.market_id}: its catalog log is held by running process ${e.holderPid}, which keeps it current`);
    } else {
      sum.failed++;
      log(`cannot open the catalog log of ${m.market_id}: ${(e as Error).message}`);
    }
    return;
  }
  try {
    const last = w.lastRecord();
    const prev = last?.type === 'catalog' ? last.market : null;
    // recv_ts never goes behind the log's tail (a stepped clock must not fail the append).
    const recv = Math.max(Date.now(), last?.recv_ts ?? 0);
    const ev = src.change(prev, m, recv);
    if (ev === null) {
      sum.unchanged++;
      return;
    }
    const rec: CatalogEvent = { ...ev, origin: 'rest' };
    const acked = w.append(rec);
    await w.flush(); // one record per log: fsync now rather than after the group-commit delay
    await acked;
    sum.written++;
  } catch (e) {
    sum.failed++;
    log(`cannot append to the catalog log of ${m.market_id}: ${(e as Error).message}`);
  } finally {
    await w.close().catch(() => undefined);
  }
}
