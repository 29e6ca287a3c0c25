// Open operational routes: `/healthz` (recorder processes, their lag and last write per kind, from
// the status files) and `/metrics` (Prometheus text of this process's registry). No key needed.

import type { FastifyInstance } from 'fastify';
import {
  archiveLagBytes,
  archiveLagDays,
  archiveUploadErrors,
  registry,
  storageDroppedRecords,
  storageFreeBytes,
  storagePausedWriters,
} from '../../metrics.js';
import { archiveLag, archiveUploadErrors as uploadErrorsOf, freeBytes, type ArchiveLag } from '../../storage/index.js';
import { requestMetricsText } from '../plugins/request-metrics.js';
import { toIsoOrNull } from '../../schema/time.js';

const kindSchema = {
  type: 'object',
  properties: {
    connected: { type: 'boolean' },
    last_message_time: { type: ['string', 'null'] },
    last_write_time: { type: ['string', 'null'] },
    lag_ms: { type: ['integer', 'null'] },
  },
};

/** How long one look at the archive lag is reused: it reads every partition's manifest. */
const LAG_TTL_MS = 5_000;

export default async function healthRoutes(app: FastifyInstance): Promise<void> {
  let lagCache: { at: number; lag: Promise<ArchiveLag> } | null = null;
  const lag = (): Promise<ArchiveLag> | null => {
    const a = app.pmtape.config.storage.archive;
    if (!a) return null;
    const now = Date.now();
    if (!lagCache || now - lagCache.at > LAG_TTL_MS) {
      const p = archiveLag(app.pmtape.config.dataDir, a);
      p.catch(() => (lagCache = null));
      lagCache = { at: now, lag: p };
    }
    return lagCache.lag;
  };
  app.get(
    '/healthz',
    {
      schema: {
        hide: false,
        description: 'Liveness of the API and of every record process writing to the same data dir.',
        security: [],
        // `properties` even when empty: without it the OpenAPI document listed `type` and
        // `additionalProperties` as query parameters (the openapi plugin now adds it to any route).
        querystring: { type: 'object', properties: {}, additionalProperties: false },
        response: {
          200: {
            type: 'object',
            properties: {
              status: { type: 'string' },
              time: { type: 'string' },
              recorders: {
                type: 'array',
                items: {
                  type: 'object',
                  properties: {
                    pid: { type: 'integer' },
                    alive: { type: 'boolean' },
                    updated_time: { type: 'string' },
                    kinds: { type: 'object', additionalProperties: kindSchema },
                    storage: {
                      type: 'object',
                      properties: {
                        paused_writers: { type: 'integer' },
                        dropped_records: { type: 'integer' },
                        free_bytes: { type: ['integer', 'null'] },
                      },
                    },
                  },
                },
              },
              archive: {
                type: 'object',
                properties: { lag_days: { type: 'integer' }, lag_bytes: { type: 'integer' }, last_published: { type: ['string', 'null'] } },
              },
            },
          },
        },
      },
    },
    async () => {
      const now = Date.now();
      const list = await app.pmtape.status.all();
      const recorders = list.map((r) => ({
        pid: r.pid,
        alive: r.alive,
        updated_time: new Date(r.updated_ts).toISOString(),
        storage: r.storage,
        kinds: Object.fromEntries(
          Object.entries(r.kinds).map(([kind, k]) => {
            const lastWrite = typeof k.last_write_ts === 'number' ? k.last_write_ts : null;
            const lastMsg = typeof k.last_message_ts === 'number' ? k.last_message_ts : null;
            return [
              kind,
              {
                connected: k.connected === true,
                last_message_time: toIsoOrNull(lastMsg),
                last_write_time: toIsoOrNull(lastWrite),
                lag_ms: lastMsg === null ? null : Math.max(0, now - lastMsg),
              },
            ];
          }),
        ),
      }));
      // The API itself is up; recorders are reported, not required (a serve-only process is healthy).
      // Degraded: every record process is gone, or a live one has writers paused by the disk.
      const paused = list.some((r) => r.alive && r.storage.paused_writers > 0);
      let status = list.length === 0 ? 'ok' : list.some((r) => r.alive) && !paused ? 'ok' : 'degraded';
      // With an archive: degraded once more closed days wait than storage.archive.max_lag_days.
      const archive = await lag();
      if (archive && archive.lag_days > app.pmtape.config.storage.archive!.maxLagDays) status = 'degraded';
      return { status, time: new Date(now).toISOString(), recorders, ...(archive ? { archive } : {}) };
    },
  );

  app.get(
    '/metrics',
    {
      schema: {
        description: 'Prometheus text exposition of this process (requests, storage, stream, archive).',
        security: [],
        response: { 200: { description: 'Prometheus text format 0.0.4', content: { 'text/plain': { schema: { type: 'string' } } } } },
      },
    },
    async (_req, reply) => {
      let paused = 0;
      let dropped = 0;
      for (const r of await app.pmtape.status.all()) {
        if (!r.alive) continue;
        paused += r.storage.paused_writers;
        dropped += r.storage.dropped_records;
      }
      storagePausedWriters.set(paused);
      storageDroppedRecords.set(dropped);
      const free = await freeBytes(app.pmtape.config.dataDir);
      if (free !== null) storageFreeBytes.set(free);
      const archive = await lag();
      if (archive) {
        archiveLagDays.set(archive.lag_days);
        archiveLagBytes.set(archive.lag_bytes);
        archiveUploadErrors.reset();
        archiveUploadErrors.inc(await uploadErrorsOf(app.pmtape.config.dataDir));
      }
      void reply.type(registry.contentType);
      const text = await registry.metrics();
      return (text.endsWith('\n') ? text : `${text}\n`) + requestMetricsText();
    },
  );
}
