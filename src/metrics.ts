// Prometheus metrics of this process (prom-client). Recorders, storage and the API increment these;
// `/metrics` serves the registry. Labels are kinds, families and reasons, never market ids, so the
// number of series stays small however many markets are recorded.

import client from 'prom-client';

export const registry = new client.Registry();
client.collectDefaultMetrics({ register: registry, prefix: 'pmtape_' });

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
