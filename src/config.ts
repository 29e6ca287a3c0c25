// One frozen configuration object for every command: command-line flags win over PMTAPE_*
// environment variables, which win over the JSON config file, which wins over defaults.
// Validation errors name the offending field so an operator can fix the file without guessing.

import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { ConfigError, logLevel, parseRateLimits, tooDeep, MAX_CONFIG_DEPTH, type RateLimit } from './config-checks.js';

export { ConfigError, LOG_LEVELS, MAX_CONFIG_DEPTH, parseRateLimits, type RateLimit } from './config-checks.js';
import { archiveOf, type ArchiveConfig } from './config-archive.js';

export { parseArchiveUrl, RECORDER_ID, type ArchiveConfig } from './config-archive.js';

export interface UpstreamConfig {
  /** Base REST URL (no trailing slash). */
  readonly rest?: string;
  /** WebSocket URL. */
  readonly ws?: string;
  /** Requests per second this recorder may spend on the upstream's REST. */
  readonly rate_per_s?: number;
  /** Operator credential for upstreams that want one (never logged, never asked of API users). */
  readonly api_key?: string;
  /** Turn a kind off without removing its URLs. */
  readonly enabled?: boolean;
}

export interface Config {
  readonly dataDir: string;
  readonly host: string;
  readonly port: number;
  readonly logLevel: string;
  /** Per plan: requests per window; null = rate limiting off. */
  readonly rateLimits: { readonly free: RateLimit; readonly paid: RateLimit } | null;
  /** Live-stream limits and timers (`PMTAPE_STREAM_*`); the stream plugin's own options win. */
  readonly stream: StreamTuning;
  /** Connection caps and the expensive-request limit of the API server (config `server`, `PMTAPE_*`). */
  readonly server: ServerLimits;
  readonly upstreams: {
    readonly clob: UpstreamConfig;
    readonly catalog: UpstreamConfig;
    readonly yesno: UpstreamConfig;
    readonly wallet: UpstreamConfig;
  };
  /** Coins whose up/down markets are recorded (clob/catalog and wallet kinds). */
  readonly coins: readonly string[];
  /** Config `"coins": "all"` (or a `"*"` entry): the catalog recorder also records every other coin
   *  whose up/down series the catalogue lists, adding new ones as they appear. */
  readonly discoverCoins?: boolean;
  /** Window lengths recorded, e.g. `5m`, `15m`. */
  readonly windows: readonly string[];
  /** Yes/no series tickers recorded. */
  readonly series: readonly string[];
  /** Hash shard `k/n` of markets this record process owns (scale-out), or null for all. */
  readonly shard: { readonly k: number; readonly n: number } | null;
  readonly storage: {
    /** Group commit: fsync at most every this many ms... */
    readonly fsyncIntervalMs: number;
    /** ...or every this many records, whichever comes first. */
    readonly fsyncMaxRecords: number;
    /** Full-book checkpoint every N deltas or S seconds per market. */
    readonly checkpointEveryDeltas: number;
    readonly checkpointEveryMs: number;
    /** Days a compacted log is kept after its Parquet was verified. */
    readonly retentionDays: number;
    /** Grace after UTC midnight before `start` compacts the closed day. */
    readonly compactGraceMs: number;
    /**
     * Threads a compaction uses (config `storage.compaction_threads`, 1 or 2): with 2,
     * `book_snapshots` is built in a helper thread beside the record datasets. Null when the config
     * file does not say: then `pmtape compact` uses 2 and `start`'s background compaction 1, since it
     * shares the machine with the recorders (whose receive times must not wait for a core).
     */
    readonly compactionThreads: 1 | 2 | null;
    /** Memory for the readers' cached day-file indexes (env PMTAPE_INDEX_CACHE_BYTES, ≥ 1 MiB used). */
    readonly indexCacheBytes: number;
    /**
     * Writers pause while the data dir's filesystem has less free space than this (config file
     * `storage.min_free_bytes`, default 256 MiB; 0 turns the guard off), so compaction and the API
     * keep room; they resume on their own once there is room again.
     */
    readonly minFreeBytes: number;
    /** The object-storage archive (config `storage.archive`, env PMTAPE_ARCHIVE_URL/_ENDPOINT), or null: none. */
    readonly archive: ArchiveConfig | null;
    /** Local disk for ranges read from the archive (config `storage.archive_cache_bytes`, default 1 GiB). */
    readonly archiveCacheBytes: number;
  };
  /** Seconds without any message after which a connection counts as stale. */
  readonly staleAfterMs: number;
  /**
   * The read side's safety net under push-driven freshness (env PMTAPE_LATEST_RECHECK_MS, default
   * 1000): a warm latest book is re-checked against its log at least this often even when no file
   * event came; 0 re-checks on every request (no trust in file events at all).
   */
  readonly latestRecheckMs: number;
  /**
   * Serve prom-client's GC duration histogram in `/metrics` (env PMTAPE_GC_METRICS=on; default off:
   * observing every collection lengthens the API's tail latency, see src/metrics.ts).
   */
  readonly gcMetrics: boolean;
  /** Recorder timers and discovery horizons (config file `recorders`, snake_case keys). */
  readonly recorders: RecorderTuning;
  /** The path of the config file that was read, if any. */
  readonly configFile: string | null;
}

export interface RecorderTuning {
  /** Text PING cadence on upstream WebSockets (the watchdog is `staleAfterMs`). */
  readonly pingIntervalMs: number;
  /** Reconnect backoff: capped, jittered exponential between these bounds. */
  readonly backoffMinMs: number;
  readonly backoffMaxMs: number;
  /** How often the catalogue is polled for new markets and changes. */
  readonly catalogPollMs: number;
  /** Markets whose window starts within this much of now are tracked (books subscribed). */
  readonly lookaheadMs: number;
  /** Ended markets stay in the catalogue poll this long waiting for their resolution. */
  readonly resolveHorizonMs: number;
  /** How often `<dataDir>/status/record-<pid>.json` is rewritten. */
  readonly statusIntervalMs: number;
}

export const DEFAULT_RECORDER_TUNING: RecorderTuning = {
  pingIntervalMs: 10_000,
  backoffMinMs: 250,
  backoffMaxMs: 30_000,
  catalogPollMs: 5_000,
  lookaheadMs: 3_600_000,
  resolveHorizonMs: 1_800_000,
  statusIntervalMs: 2_000,
};

const TUNING_KEYS: Record<string, keyof RecorderTuning> = {
  ping_interval_ms: 'pingIntervalMs',
  backoff_min_ms: 'backoffMinMs',
  backoff_max_ms: 'backoffMaxMs',
  catalog_poll_ms: 'catalogPollMs',
  lookahead_ms: 'lookaheadMs',
  resolve_horizon_ms: 'resolveHorizonMs',
  status_interval_ms: 'statusIntervalMs',
};

function recorderTuning(v: unknown): RecorderTuning {
  if (v === undefined) return DEFAULT_RECORDER_TUNING;
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new ConfigError('recorders', 'must be an object');
  const out: Record<string, number> = { ...DEFAULT_RECORDER_TUNING };
  for (const [k, val] of Object.entries(v)) {
    const name = TUNING_KEYS[k];
    if (!name) throw new ConfigError(`recorders.${k}`, `is not a known field (known: ${Object.keys(TUNING_KEYS).join(', ')})`);
    out[name] = num(val, `recorders.${k}`, 1);
  }
  if (out.backoffMaxMs < out.backoffMinMs) throw new ConfigError('recorders.backoff_max_ms', 'must be ≥ recorders.backoff_min_ms');
  return out as unknown as RecorderTuning;
}

/** Default upstream endpoints: the real public ones (reachable only where there is a network). */
export const DEFAULT_UPSTREAMS: Config['upstreams'] = {
  clob: { ws: 'wss://ws-subscriptions-clob.polymarket.com/ws/market', rest: 'https://clob.polymarket.com' },
  catalog: { rest: 'https://gamma-api.polymarket.com', rate_per_s: 5 },
  yesno: { rest: 'https://api.elections.kalshi.com/trade-api/v2', rate_per_s: 10 },
  wallet: { rest: 'https://api.predict.fun', ws: 'wss://ws.predict.fun/ws', rate_per_s: 5 },
};

/** Flags a command may pass; undefined means "not given". */
export interface ConfigFlags {
  readonly dataDir?: string;
  readonly config?: string;
  readonly host?: string;
  readonly port?: number | string;
  readonly logLevel?: string;
}

/** Live-stream (`/v3/stream`) limits and timers. */
export interface StreamTuning {
  /** Ping period; a peer that has not answered the previous ping is dropped (API.md: 15 s). */
  readonly pingIntervalMs: number;
  /** How often open streams' keys are re-checked, so a revoked key's streams close. */
  readonly authRecheckMs: number;
  /** Largest client frame accepted (bigger ones close the connection with 1009). */
  readonly maxPayloadBytes: number;
  /** Bytes waiting on one socket beyond which the client is "too far behind" (closed with 1008). */
  readonly maxBufferedBytes: number;
  /** A history replay pauses while more than this is waiting on the socket. */
  readonly replayHighWaterBytes: number;
  /** Subscriptions one connection may hold. */
  readonly maxSubscriptions: number;
  /** How long a client closed for falling behind may take to read the close frame before being cut. */
  readonly closeGraceMs: number;
}

export const DEFAULT_STREAM_TUNING: StreamTuning = {
  pingIntervalMs: 15_000,
  authRecheckMs: 1_000,
  maxPayloadBytes: 64 * 1024,
  maxBufferedBytes: 8 * 1024 * 1024,
  replayHighWaterBytes: 1024 * 1024,
  maxSubscriptions: 1000,
  closeGraceMs: 5_000,
};

const STREAM_ENV: Record<keyof StreamTuning, string> = {
  pingIntervalMs: 'PMTAPE_STREAM_PING_MS',
  authRecheckMs: 'PMTAPE_STREAM_AUTH_RECHECK_MS',
  maxPayloadBytes: 'PMTAPE_STREAM_MAX_PAYLOAD_BYTES',
  maxBufferedBytes: 'PMTAPE_STREAM_MAX_BUFFERED_BYTES',
  replayHighWaterBytes: 'PMTAPE_STREAM_REPLAY_HIGH_WATER_BYTES',
  maxSubscriptions: 'PMTAPE_STREAM_MAX_SUBSCRIPTIONS',
  closeGraceMs: 'PMTAPE_STREAM_CLOSE_GRACE_MS',
};

/** Stream tuning from `PMTAPE_STREAM_*` over the defaults; an empty variable counts as unset. */
export function streamTuning(env: NodeJS.ProcessEnv): StreamTuning {
  const out: Record<string, number> = { ...DEFAULT_STREAM_TUNING };
  for (const [k, name] of Object.entries(STREAM_ENV)) {
    const text = env[name];
    if (text === undefined || text === '') continue;
    const n = Number(text);
    if (!Number.isFinite(n) || n <= 0) throw new ConfigError(name, `must be a positive number, got "${text}"`);
    out[k] = n;
  }
  return Object.freeze(out) as unknown as StreamTuning;
}

/**
 * What one `serve` holds open and runs at once (docs/self-hosting.md, "Connections"): connections
 * in all and per client address (past either, the oldest idle connection is closed to make room,
 * or the new one when none is idle), how long a request's headers may take, and how many
 * expensive requests (coverage lists, replays, dataset rows) one key may have running.
 */
export interface ServerLimits {
  readonly maxConnections: number;
  readonly maxConnectionsPerAddress: number;
  readonly headersTimeoutMs: number;
  readonly maxExpensivePerKey: number;
}

export const DEFAULT_SERVER_LIMITS: ServerLimits = {
  maxConnections: 4096,
  maxConnectionsPerAddress: 256,
  headersTimeoutMs: 10_000,
  maxExpensivePerKey: 2,
};

/** Config file field and environment variable of each server limit. */
const SERVER_LIMIT_NAMES: Record<keyof ServerLimits, readonly [string, string]> = {
  maxConnections: ['max_connections', 'PMTAPE_MAX_CONNECTIONS'],
  maxConnectionsPerAddress: ['max_connections_per_address', 'PMTAPE_MAX_CONNECTIONS_PER_ADDRESS'],
  headersTimeoutMs: ['headers_timeout_ms', 'PMTAPE_HEADERS_TIMEOUT_MS'],
  maxExpensivePerKey: ['max_expensive_per_key', 'PMTAPE_MAX_EXPENSIVE_PER_KEY'],
};

/** Server limits: env over the config file's `server` object over the defaults; positive integers. */
export function serverLimits(file: unknown, env: NodeJS.ProcessEnv): ServerLimits {
  if (file !== undefined && (typeof file !== 'object' || file === null || Array.isArray(file)))
    throw new ConfigError('server', 'must be an object');
  const f = (file ?? {}) as Record<string, unknown>;
  const fields = Object.values(SERVER_LIMIT_NAMES).map(([k]) => k);
  for (const k of Object.keys(f))
    if (!fields.includes(k)) throw new ConfigError(`server.${k}`, `is not a known field (known: ${fields.join(', ')})`);
  const out: Record<string, number> = { ...DEFAULT_SERVER_LIMITS };
  for (const [name, [field, variable]] of Object.entries(SERVER_LIMIT_NAMES)) {
    const text = env[variable];
    if (text !== undefined && text.trim() !== '') {
      if (!/^\d+$/.test(text.trim()) || Number(text) < 1)
        throw new ConfigError(variable, `must be a whole number ≥ 1, got "${text.slice(0, 40)}"`);
      out[name] = Number(text);
    } else if (f[field] !== undefined) {
      if (!Number.isInteger(f[field]) || (f[field] as number) < 1) throw new ConfigError(`server.${field}`, 'must be a whole number ≥ 1');
      out[name] = f[field] as number;
    }
  }
  if (out.maxConnectionsPerAddress > out.maxConnections) out.maxConnectionsPerAddress = out.maxConnections;
  return Object.freeze(out) as unknown as ServerLimits;
}

function stringList(v: unknown, field: string): string[] {
  if (!Array.isArray(v) || !v.every((x) => typeof x === 'string' && x.length > 0)) {
    throw new ConfigError(field, 'must be an array of non-empty strings');
  }
  return v as string[];
}

export const DEFAULT_COINS: readonly string[] = ['btc', 'eth', 'bnb'];

/** `coins`: a list of coin names, `"all"` (the defaults plus discovery) or a list holding `"*"`. */
function coinsOf(v: unknown): { coins: string[]; discover: boolean } {
  if (v === undefined) return { coins: [...DEFAULT_COINS], discover: false };
  if (v === 'all') return { coins: [...DEFAULT_COINS], discover: true };
  const why = 'must be "all" or an array of coin names like ["btc","eth"] (a "*" entry adds every coin the catalogue lists)';
  if (!Array.isArray(v)) throw new ConfigError('coins', `${why}; got ${JSON.stringify(v)?.slice(0, 40)}`);
  const out: string[] = [];
  let discover = false;
  for (const [i, c] of v.entries()) {
    if (c === '*' || c === 'all') discover = true;
    else if (typeof c === 'string' && /^[a-z0-9]{1,20}$/i.test(c)) out.push(c.toLowerCase());
    else throw new ConfigError(`coins[${i}]`, `${why}; got ${JSON.stringify(c)?.slice(0, 40)}`);
  }
  return { coins: out, discover };
}

/** An on/off switch from the environment (`on`/`off`, `1`/`0`, `true`/`false`; unset = `dflt`). */
function onOff(text: string | undefined, name: string, dflt: boolean): boolean {
  if (text === undefined || text.trim() === '') return dflt;
  const t = text.trim().toLowerCase();
  if (t === 'on' || t === '1' || t === 'true') return true;
  if (t === 'off' || t === '0' || t === 'false') return false;
  throw new ConfigError(name, `must be on or off, got "${text}"`);
}

function num(v: unknown, field: string, min: number): number {
  if (typeof v !== 'number' || !Number.isFinite(v) || v < min) throw new ConfigError(field, `must be a number ≥ ${min}`);
  return v;
}

function threads(v: unknown, field: string): 1 | 2 {
  if (v !== 1 && v !== 2)
    throw new ConfigError(field, 'must be 1 or 2 (2 builds book_snapshots in a helper thread beside the record datasets)');
  return v;
}

function upstream(v: unknown, field: string, dflt: UpstreamConfig): UpstreamConfig {
  if (v === undefined) return dflt;
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new ConfigError(field, 'must be an object');
  const o = v as Record<string, unknown>;
  for (const k of Object.keys(o)) {
    if (!['rest', 'ws', 'rate_per_s', 'api_key', 'enabled'].includes(k)) throw new ConfigError(`${field}.${k}`, 'is not a known field');
  }
  for (const k of ['rest', 'ws'] as const) {
    if (o[k] !== undefined && (typeof o[k] !== 'string' || !/^(https?|wss?):\/\//.test(o[k]))) {
      throw new ConfigError(`${field}.${k}`, 'must be an http(s):// or ws(s):// URL');
    }
  }
  if (o.rate_per_s !== undefined) num(o.rate_per_s, `${field}.rate_per_s`, 0.01);
  if (o.api_key !== undefined && typeof o.api_key !== 'string') throw new ConfigError(`${field}.api_key`, 'must be a string');
  if (o.enabled !== undefined && typeof o.enabled !== 'boolean') throw new ConfigError(`${field}.enabled`, 'must be true or false');
  return { ...dflt, ...(o as UpstreamConfig) };
}

const FILE_KEYS = ['upstreams', 'coins', 'windows', 'series', 'shard', 'storage', 'stale_after_ms', 'data_dir', 'recorders', 'server'];

/** Reads and validates the JSON config file (all fields optional). */
export function readConfigFile(path: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new ConfigError(path, `cannot be read (${(e as Error).message})`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (e) {
    throw new ConfigError(path, `is not valid JSON (${(e as Error).message})`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new ConfigError(path, 'must hold a JSON object');
  const deep = tooDeep(parsed);
  if (deep !== null)
    throw new ConfigError(
      path,
      `nests deeper than ${MAX_CONFIG_DEPTH} levels (at ${deep}); a pmtape config is at most a few levels deep: fix that field`,
    );
  for (const k of Object.keys(parsed)) {
    if (!FILE_KEYS.includes(k)) throw new ConfigError(k, `is not a known field (known: ${FILE_KEYS.join(', ')})`);
  }
  return parsed as Record<string, unknown>;
}

/** Builds the frozen config: flags > env > file > defaults. */
export function loadConfig(flags: ConfigFlags = {}, env: NodeJS.ProcessEnv = process.env): Config {
  const configFile = flags.config ?? env.PMTAPE_CONFIG ?? null;
  const file = configFile ? readConfigFile(configFile) : {};
  const ups = (file.upstreams ?? {}) as Record<string, unknown>;
  if (typeof ups !== 'object' || Array.isArray(ups)) throw new ConfigError('upstreams', 'must be an object');
  for (const k of Object.keys(ups)) {
    if (!['clob', 'catalog', 'yesno', 'wallet'].includes(k))
      throw new ConfigError(`upstreams.${k}`, 'is not a kind (clob, catalog, yesno, wallet)');
  }
  const st = (file.storage ?? {}) as Record<string, unknown>;
  let shard: Config['shard'] = null;
  if (file.shard !== undefined && file.shard !== null) {
    const m = typeof file.shard === 'string' ? /^(\d+)\/(\d+)$/.exec(file.shard) : null;
    if (!m || Number(m[2]) < 1 || Number(m[1]) >= Number(m[2])) throw new ConfigError('shard', 'must look like "k/n" with 0 ≤ k < n');
    shard = { k: Number(m[1]), n: Number(m[2]) };
  }
  const coins = coinsOf(file.coins);
  const portText = flags.port ?? env.PMTAPE_PORT ?? 8080;
  const port = Number(portText);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new ConfigError('port', `must be 0..65535, got ${portText}`);
  const cfg: Config = {
    dataDir: resolve(flags.dataDir ?? env.PMTAPE_DATA_DIR ?? (file.data_dir as string | undefined) ?? './data'),
    host: flags.host ?? env.PMTAPE_HOST ?? '127.0.0.1',
    port,
    logLevel: logLevel(flags.logLevel, env.PMTAPE_LOG_LEVEL),
    rateLimits: parseRateLimits(env.PMTAPE_RATE_LIMITS ?? 'free=60/m,paid=3000/m'),
    stream: streamTuning(env),
    server: serverLimits(file.server, env),
    upstreams: {
      clob: upstream(ups.clob, 'upstreams.clob', DEFAULT_UPSTREAMS.clob),
      catalog: upstream(ups.catalog, 'upstreams.catalog', DEFAULT_UPSTREAMS.catalog),
      yesno: upstream(ups.yesno, 'upstreams.yesno', DEFAULT_UPSTREAMS.yesno),
      wallet: upstream(ups.wallet, 'upstreams.wallet', DEFAULT_UPSTREAMS.wallet),
    },
    coins: coins.coins,
    discoverCoins: coins.discover,
    windows: file.windows === undefined ? ['5m', '15m'] : stringList(file.windows, 'windows'),
    series: file.series === undefined ? ['KXBTC15M', 'KXETH15M'] : stringList(file.series, 'series'),
    shard,
    storage: {
      fsyncIntervalMs: st.fsync_interval_ms === undefined ? 50 : num(st.fsync_interval_ms, 'storage.fsync_interval_ms', 0),
      fsyncMaxRecords: st.fsync_max_records === undefined ? 1000 : num(st.fsync_max_records, 'storage.fsync_max_records', 1),
      checkpointEveryDeltas:
        st.checkpoint_every_deltas === undefined ? 500 : num(st.checkpoint_every_deltas, 'storage.checkpoint_every_deltas', 1),
      checkpointEveryMs: st.checkpoint_every_ms === undefined ? 60_000 : num(st.checkpoint_every_ms, 'storage.checkpoint_every_ms', 100),
      retentionDays: st.retention_days === undefined ? 7 : num(st.retention_days, 'storage.retention_days', 0),
      compactGraceMs: st.compact_grace_ms === undefined ? 3_600_000 : num(st.compact_grace_ms, 'storage.compact_grace_ms', 0),
      compactionThreads: st.compaction_threads === undefined ? null : threads(st.compaction_threads, 'storage.compaction_threads'),
      indexCacheBytes:
        env.PMTAPE_INDEX_CACHE_BYTES === undefined
          ? 64 * 1024 * 1024
          : num(Number(env.PMTAPE_INDEX_CACHE_BYTES), 'PMTAPE_INDEX_CACHE_BYTES', 0),
      minFreeBytes: st.min_free_bytes === undefined ? DEFAULT_MIN_FREE_BYTES : num(st.min_free_bytes, 'storage.min_free_bytes', 0),
      archive: archiveOf(
        st.archive,
        env.PMTAPE_ARCHIVE_URL,
        env.PMTAPE_ARCHIVE_ENDPOINT,
        (f, why) => new ConfigError(f, why),
        env.PMTAPE_RECORDER_ID,
      ),
      archiveCacheBytes:
        st.archive_cache_bytes === undefined ? 1024 * 1024 * 1024 : num(st.archive_cache_bytes, 'storage.archive_cache_bytes', 0),
    },
    staleAfterMs: file.stale_after_ms === undefined ? 30_000 : num(file.stale_after_ms, 'stale_after_ms', 100),
    latestRecheckMs:
      env.PMTAPE_LATEST_RECHECK_MS === undefined ? 1000 : num(Number(env.PMTAPE_LATEST_RECHECK_MS), 'PMTAPE_LATEST_RECHECK_MS', 0),
    gcMetrics: onOff(env.PMTAPE_GC_METRICS, 'PMTAPE_GC_METRICS', false),
    recorders: recorderTuning(file.recorders),
    configFile: configFile ? resolve(configFile) : null,
  };
  return Object.freeze(cfg);
}

/** `storage.min_free_bytes` when the config file does not say. */
export const DEFAULT_MIN_FREE_BYTES = 256 * 1024 * 1024;

/**
 * The API key a client command (`pmtape pull`) sends: the `--key` flag, else `PMTAPE_KEY`, else
 * none (the server then answers 401, which the command explains).
 */
export function clientKey(flag: string | undefined, env: NodeJS.ProcessEnv = process.env): string | null {
  const key = flag ?? env.PMTAPE_KEY;
  return key && key.trim() !== '' ? key.trim() : null;
}
