// Prometheus metrics of this process (prom-client). Recorders, storage and the API increment these;
// `/metrics` serves the registry. Labels are kinds, families and reasons, never market ids, so the
// number of series stays small however many markets are recorded.

import { createRequire } from 'node:module';
import client from 'prom-client';

export const registry = new client.Registry();

/** One of prom-client's default metrics: registers its series (and any observer) on `registry`. */
type DefaultMetric = (registry: client.Registry, config: { prefix: string }) => void;
const requireCjs = createRequire(import.meta.url);
const defaultMetric = (name: string): DefaultMetric => requireCjs(`prom-client/lib/metrics/${name}`) as DefaultMetric;
const PREFIX = { prefix: 'pmtape_' };

// prom-client's default metrics (CPU, memory, heap spaces, file descriptors, event-loop lag,
// handles, version) but its GC histogram, which `collectDefaultMetrics` cannot leave out: that one
// observes every collection (a `PerformanceObserver` of `gc` entries), and Node's work for each
// entry lands right after the collection's pause. Under load a young-generation collection comes
// every few ms, so it lengthened exactly the stalls that make the API's p99 (docs/api.md). It is opt-in
// (PMTAPE_GC_METRICS=on, `enableGcMetrics`). The list is prom-client's own, so a default metric
// added by a later version is served too; a module it moved fails at startup, not silently.
for (const name of client.collectDefaultMetrics.metricsList) if (name !== 'gc') defaultMetric(name)(registry, PREFIX);

let gcMetrics = false;
/** Adds prom-client's `pmtape_nodejs_gc_duration_seconds` histogram (idempotent). */
export function enableGcMetrics(): void {
  if (gcMetrics) return;
  gcMetrics = true;
  defaultMetric('gc')(registry, PREFIX);
}

export const recorderMessages = new client.Counter({
  name: 'pmtape_recorder_messages_total',
  help: 'Upstream messages received, by kind and outcome (ok, ignored, malformed, unknown_type)',
  labelNames: ['kind', 'result'] as const,
  registers: [registry],
});

export const recorderErrors = new client.Counter({
  name: 'pmtape_recorder_errors_total',
  help: 'Recorder errors by kind and code (connect, http_429, http_5xx, timeout, ...)',
  labelNames: ['kind', 'code'] as const,
  registers: [registry],
});

export const recorderGaps = new client.Counter({
  name: 'pmtape_recorder_gaps_total',
  help: 'Gap records written, by kind and reason',
  labelNames: ['kind', 'reason'] as const,
  registers: [registry],
});

export const recorderConnected = new client.Gauge({
  name: 'pmtape_recorder_connected',
  help: '1 while the recorder of this kind holds a live upstream connection',
  labelNames: ['kind'] as const,
  registers: [registry],
});

export const logBytesWritten = new client.Counter({
  name: 'pmtape_log_bytes_written_total',
  help: 'Bytes appended to append logs, by stream',
  labelNames: ['stream'] as const,
  registers: [registry],
});

export const logRecordsWritten = new client.Counter({
  name: 'pmtape_log_records_written_total',
  help: 'Records appended to append logs, by stream',
  labelNames: ['stream'] as const,
  registers: [registry],
});

// HTTP request counts and latency: src/api/plugins/request-metrics.ts (plain tallies, rendered at scrape).

export const streamClients = new client.Gauge({
  name: 'pmtape_stream_clients',
  help: 'Open WebSocket stream connections',
  registers: [registry],
});

export const streamMessages = new client.Counter({
  name: 'pmtape_stream_messages_total',
  help: 'Live stream messages handed to client sockets (books and gaps, live and replayed)',
  registers: [registry],
});

export const streamDisconnects = new client.Counter({
  name: 'pmtape_stream_disconnects_total',
  help: 'Stream connections closed by the server, by reason (too_far_behind, key_revoked, dead_peer)',
  labelNames: ['reason'] as const,
  registers: [registry],
});

// Storage health, set by the serving process at each scrape from the record processes' status
// files (a `record` process has no /metrics of its own) and from statfs of the data dir.
export const storagePausedWriters = new client.Gauge({
  name: 'pmtape_storage_paused_writers',
  help: 'Log writers paused because the disk refused writes or free space is below storage.min_free_bytes (all live record processes)',
  registers: [registry],
});

export const storageDroppedRecords = new client.Gauge({
  name: 'pmtape_storage_dropped_records',
  help: 'Records dropped by paused writers since their record processes started (all live record processes)',
  registers: [registry],
});

export const storageFreeBytes = new client.Gauge({
  name: 'pmtape_storage_free_bytes',
  help: 'Free bytes of the filesystem holding the data dir (statfs bavail × bsize)',
  registers: [registry],
});

export const datasetsSkippedEntries = new client.Counter({
  name: 'pmtape_datasets_skipped_entries_total',
  help: 'Manifest entries /v3/datasets left out, each counted once per process, by reason (bad_field, bad_name, bad_manifest, outside_root)',
  labelNames: ['reason'] as const,
  registers: [registry],
});

// Compaction inside `start` (set from its worker's messages; `pmtape compact` prints the same).
export const compactionQuarantined = new client.Counter({
  name: 'pmtape_compaction_quarantined_records_total',
  help: "Records compaction set aside in a partition's _quarantine.jsonl (a value its columns cannot hold exactly), by family and dataset",
  labelNames: ['family', 'dataset'] as const,
  registers: [registry],
});

export const compactionFailures = new client.Counter({
  name: 'pmtape_compaction_failures_total',
  help: 'Partitions (or whole days, dataset "*") whose compaction failed and will be retried, by family and dataset',
  labelNames: ['family', 'dataset'] as const,
  registers: [registry],
});

// The archive (API.md §9), set at each scrape from the data dir's local published state, so every
// process serving the data dir reports the same lag whichever process publishes.
export const archiveLagDays = new client.Gauge({
  name: 'pmtape_archive_lag_days',
  help: 'Compacted days not yet published to and verified in the archive (storage.archive)',
  registers: [registry],
});

export const archiveLagBytes = new client.Gauge({
  name: 'pmtape_archive_lag_bytes',
  help: 'Bytes of the compacted days not yet published to the archive',
  registers: [registry],
});

export const archiveUploadErrors = new client.Counter({
  name: 'pmtape_archive_upload_errors_total',
  help: 'Failed archive upload attempts (retried or not) by every process publishing from this data dir',
  registers: [registry],
});
