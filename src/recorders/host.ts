// The recorder host: starts the enabled recorder kinds of one process over one LogSink, keeps the
// status file fresh, and stops everything cleanly (flush, fsync, close). The kinds are those of the
// family descriptors (src/families/); `inShard` splits markets between record processes.

import type { Config } from '../config.js';
import { FAMILIES, type Family } from '../schema/observation.js';
import { LogSink } from './sink.js';
import { LockedError } from '../errors.js';
import {
  silentLogger,
  type KindStatus,
  type Recorder,
  type RecorderDeps,
  type RecorderError,
  type RecorderKind,
  type RecorderLogger,
} from './recorder.js';
import { removeDeadStatuses, removeStatus, writeStatus, type StatusFile } from './status.js';
import { RECORDER_KINDS } from './venues.js';

export type HostStatus = StatusFile;

export interface RecorderHost {
  readonly recorders: readonly Recorder[];
  readonly sink: LogSink;
  status(): HostStatus;
  /** Stops every recorder, waits for acknowledged appends, fsyncs, closes, removes the status file. */
  stop(): Promise<void>;
}

export interface StartOptions {
  readonly logger?: RecorderLogger;
  /** Kinds to run (default: every registered kind whose upstream is not `enabled: false`). */
  readonly kinds?: readonly string[];
  readonly onError?: (kind: string, err: RecorderError) => void;
  /** Write the status file (default true). */
  readonly statusFile?: boolean;
}

/** FNV-1a 32-bit of the market id: stable across processes and Node versions. */
export function shardHash(marketId: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < marketId.length; i++) {
    h ^= marketId.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** True when `marketId` belongs to shard `k/n` (always true without sharding). */
export function inShard(marketId: string, shard: Config['shard']): boolean {
  return shard === null || shardHash(marketId) % shard.n === shard.k;
}

function selectKinds(config: Config, wanted: readonly string[] | undefined): RecorderKind[] {
  const enabled = (k: string): boolean => (config.upstreams as Record<string, { enabled?: boolean }>)[k]?.enabled !== false;
  const names = new Set((wanted ?? RECORDER_KINDS.map((k) => k.kind)).filter(enabled));
  for (const k of RECORDER_KINDS) if (names.has(k.kind)) for (const r of k.requires ?? []) names.add(r);
  for (const n of names)
    if (!RECORDER_KINDS.some((k) => k.kind === n))
      throw new Error(`unknown recorder kind "${n}" (known: ${RECORDER_KINDS.map((k) => k.kind).join(', ')})`);
  return RECORDER_KINDS.filter((k) => names.has(k.kind));
}

export async function startRecorders(config: Config, opts: StartOptions = {}): Promise<RecorderHost> {
  const logger = opts.logger ?? silentLogger;
  const startedTs = Date.now();
  const lockedReported = new Set<string>();
  const sink = new LogSink(config.dataDir, {
    monotonic: true,
    writer: { fsyncIntervalMs: config.storage.fsyncIntervalMs, fsyncMaxRecords: config.storage.fsyncMaxRecords },
    minFreeBytes: config.storage.minFreeBytes,
    logger,
    onError: (err, key) => {
      // A market held by another live recorder fails every append: say so once per market, not
      // once per message (an overlapping shard config would otherwise flood the log).
      if (err instanceof LockedError) {
        if (lockedReported.has(err.file ?? '')) return;
        lockedReported.add(err.file ?? '');
      }
      logger.error({ err: err.message, key }, 'append failed');
      opts.onError?.('storage', Object.assign(err, { code: 'write' }) as RecorderError);
    },
  });
  const deps: RecorderDeps = {
    config,
    logger,
    sink,
    inShard: (id) => inShard(id, config.shard),
    shared: new Map(),
    onError: opts.onError,
  };
  const recorders: Recorder[] = [];
  // A writer resuming after a disk pause asks the recorders of its family for full books.
  sink.resync = (key, recvTs) => {
    for (const r of recorders) {
      if (r.family !== key.family) continue;
      const full = r.fullBooks(key, recvTs);
      if (full) return full;
    }
    return null;
  };
  let stopped = false;
  try {
    for (const k of selectKinds(config, opts.kinds)) {
      const r = k.create(deps);
      recorders.push(r);
      await r.start();
    }
  } catch (e) {
    for (const r of recorders.reverse()) await r.stop().catch(() => undefined);
    await sink.close();
    throw e;
  }

  const status = (): HostStatus => {
    const kinds: Record<string, KindStatus> = {};
    const connected = Object.fromEntries(FAMILIES.map((f) => [f, [] as string[]])) as Record<Family, string[]>;
    for (const r of recorders) {
      kinds[r.kind] = r.status();
      connected[r.family].push(...r.connectedMarkets());
    }
    return { pid: process.pid, started_ts: startedTs, updated_ts: Date.now(), kinds, connected, storage: sink.storageStats() };
  };

  const writeStatusFile = opts.statusFile !== false;
  let statusFailing = false;
  const tick = (): void => {
    if (stopped) return;
    const err = writeStatus(config.dataDir, status());
    // One line when writing it starts failing and one when it works again, not one per tick.
    if (err && !statusFailing) logger.warn({ err: err.message }, 'cannot write status file');
    else if (!err && statusFailing) logger.info({}, 'status file written again');
    statusFailing = err !== null;
    removeDeadStatuses(config.dataDir);
  };
  let timer: NodeJS.Timeout | null = null;
  if (writeStatusFile) {
    tick();
    timer = setInterval(tick, config.recorders.statusIntervalMs);
    timer.unref();
  }

  return {
    recorders,
    sink,
    status,
    async stop() {
      if (stopped) return;
      stopped = true;
      if (timer) clearInterval(timer);
      for (const r of [...recorders].reverse()) {
        await r.stop().catch((e: unknown) => logger.error({ err: (e as Error).message, kind: r.kind }, 'stop failed'));
      }
      await sink.close();
      if (writeStatusFile) removeStatus(config.dataDir);
    },
  };
}
