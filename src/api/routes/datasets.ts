// Parquet datasets for researchers (API.md §6): `GET /v3/datasets` lists published partition files
// from their manifests; `GET /v3/datasets/files/<path>` streams one with Range, ETag and
// Content-Length. Only files a manifest lists are served, so no path can leave the Parquet root
// and nothing half-written is ever downloaded. Wallet-prediction partitions need the paid plan.

import { createReadStream } from 'node:fs';
import { open } from 'node:fs/promises';
import { join } from 'node:path';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { invalidParameter, notFound, PmtapeError } from '../../errors.js';
import { FAMILIES, type Family } from '../../schema/observation.js';
import { dayStartMs, toIsoOrNull } from '../../schema/time.js';
import { listPartitions, partitionDir, readManifest, partitionRel } from '../../storage/parquet/manifest.js';
import { DATASETS, type Dataset } from '../../storage/parquet/schema.js';
import { envelope } from '../plugins/error-handler.js';
import { listOf, q, query } from '../schemas.js';

const entrySchema = {
  type: 'object',
  properties: {
    path: { type: 'string' }, rows: { type: 'integer' }, bytes: { type: 'integer' }, sha256: { type: 'string' },
    min_time: { type: ['string', 'null'] }, max_time: { type: ['string', 'null'] },
  },
  required: ['path', 'rows', 'bytes', 'sha256', 'min_time', 'max_time'],
} as const;

const DATE = { type: 'string', maxLength: 32, description: 'UTC day YYYY-MM-DD (inclusive)' } as const;
const PATH = /^family=([a-z-]+)\/dataset=([a-z]+)\/date=(\d{4}-\d{2}-\d{2})\/([A-Za-z0-9][A-Za-z0-9._-]{0,200}\.parquet)$/;

function dateParam(v: unknown, name: string): string | undefined {
  if (v === undefined) return undefined;
  if (typeof v !== 'string' || dayStartMs(v) === null) throw invalidParameter(name, 'must be a UTC day like 2026-07-26');
  return v;
}

const isPaid = (req: FastifyRequest): boolean => req.apiKey?.plan === 'paid';

const planRequired = (req: FastifyRequest): PmtapeError =>
  new PmtapeError('plan_required', `Wallet-prediction datasets need the paid plan; the key "${req.apiKey?.name ?? ''}" is on the ${req.apiKey?.plan ?? 'free'} plan.`);

/** A Range header → [start, end] inclusive; null = serve everything; 'bad' = unsatisfiable. */
export function parseRange(header: string | undefined, size: number): [number, number] | null | 'bad' {
  if (!header) return null;
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!m || (m[1] === '' && m[2] === '')) return null; // malformed or multi-range: ignored (RFC 9110)
  if (m[1] === '') {
    const n = Number(m[2]);
    if (n === 0 || size === 0) return 'bad';
    return [Math.max(0, size - n), size - 1];
  }
  const start = Number(m[1]);
  const end = m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1);
  if (!Number.isSafeInteger(start) || start >= size || end < start) return 'bad';
  return [start, end];
}

export default async function datasetsRoutes(app: FastifyInstance): Promise<void> {
  const { dataDir } = app.pmtape.config;

  app.get('/datasets', {
    config: { plan: 'free' },
    schema: {
      description: 'Published Parquet partition files (from their manifests), oldest first.',
      querystring: query({
        family: { type: 'string', enum: [...FAMILIES] },
        dataset: { type: 'string', enum: [...DATASETS] },
        start_date: DATE, end_date: DATE, limit: q.limit, cursor: q.cursor,
      }),
      response: { 200: listOf(entrySchema) },
    },
  }, async (req) => {
    const qs = req.query as Record<string, unknown>;
    const family = qs.family as Family | undefined;
    const start = dateParam(qs.start_date, 'start_date');
    const end = dateParam(qs.end_date, 'end_date');
    if (start && end && start > end) throw invalidParameter('start_date', 'must not be after end_date');
    if (family === 'wallet-prediction' && !isPaid(req)) throw planRequired(req);
    const limit = (qs.limit as number | undefined) ?? 100;
    const route = 'datasets';
    const after = typeof qs.cursor === 'string' ? String(app.pmtape.cursors.decode(qs.cursor, route, qs).after ?? '') : '';
    const data: Record<string, unknown>[] = [];
    let next: string | null = null;
    const parts = (await listPartitions(dataDir, { family, dataset: qs.dataset as Dataset | undefined }))
      .filter((p) => (!start || p.date >= start) && (!end || p.date <= end) && (p.family !== 'wallet-prediction' || isPaid(req)))
      // Oldest first across families, so a researcher can sync day by day.
      .map((p) => ({ p, k: `${p.date}/${partitionRel(p.family, p.dataset, p.date)}` }))
      .sort((a, b) => (a.k < b.k ? -1 : a.k > b.k ? 1 : 0))
      .map((x) => x.p);
    for (const p of parts) {
      const m = await readManifest(p.dir);
      for (const f of m?.files ?? []) {
        const path = `${partitionRel(p.family, p.dataset, p.date)}/${f.file}`;
        const key = `${p.date}/${path}`;
        if (key <= after) continue;
        if (data.length === limit) {
          next = app.pmtape.cursors.encode(route, qs, { after: String(data[data.length - 1].key) });
          break;
        }
        data.push({ key, path, rows: f.rows, bytes: f.bytes, sha256: f.sha256, min_time: toIsoOrNull(f.min_time), max_time: toIsoOrNull(f.max_time) });
      }
      if (next) break;
    }
    return { data: data.map(({ key: _k, ...rest }) => rest), next_cursor: next };
  });

  app.get('/datasets/files/*', {
    config: { plan: 'free' },
    schema: { description: 'Downloads one partition file (Range, ETag and If-None-Match supported).' },
  }, async (req: FastifyRequest, reply: FastifyReply) => {
    const rel = (req.params as { '*': string })['*'] ?? '';
    const m = PATH.exec(rel);
    const unknown = notFound(`No dataset file '${rel.slice(0, 300)}'; list files with /v3/datasets.`);
    if (!m || !(FAMILIES as readonly string[]).includes(m[1]) || !(DATASETS as readonly string[]).includes(m[2]) || dayStartMs(m[3]) === null) throw unknown;
    const [family, dataset, date, name] = [m[1] as Family, m[2] as Dataset, m[3], m[4]];
    if (family === 'wallet-prediction' && !isPaid(req)) throw planRequired(req);
    const dir = partitionDir(dataDir, family, dataset, date);
    const entry = (await readManifest(dir))?.files.find((f) => f.file === name);
    if (!entry) throw unknown;
    const fh = await open(join(dir, name), 'r').catch(() => null);
    if (!fh) throw unknown;
    const size = (await fh.stat()).size;
    if (size !== entry.bytes) {
      await fh.close();
      throw unknown; // being replaced right now: the manifest and the file disagree for a moment
    }
    const etag = `"${entry.sha256}"`;
    void reply.header('ETag', etag).header('Accept-Ranges', 'bytes').header('Cache-Control', 'public, max-age=3600')
      .header('Content-Disposition', `attachment; filename="${name}"`);
    const inm = req.headers['if-none-match'];
    if (inm && inm.split(',').some((t) => t.trim() === etag || t.trim() === '*')) {
      await fh.close();
      return reply.code(304).send();
    }
    const ifRange = req.headers['if-range'];
    const range = ifRange && ifRange !== etag ? null : parseRange(req.headers.range, size);
    if (range === 'bad') {
      await fh.close();
      return reply.code(416).header('Content-Range', `bytes */${size}`).type('application/json; charset=utf-8')
        .send({ error: { ...envelope('invalid_parameter', `Header 'Range' asks for bytes outside the file (${size} bytes).`, String(req.id)).error, status: 416 } });
    }
    const [start, end] = range ?? [0, size - 1];
    void reply.type('application/vnd.apache.parquet').header('Content-Length', String(end - start + 1));
    if (range) void reply.code(206).header('Content-Range', `bytes ${start}-${end}/${size}`);
    if (req.method === 'HEAD' || size === 0) {
      await fh.close();
      return reply.send();
    }
    return reply.send(createReadStream('', { fd: fh, start, end, autoClose: true }));
  });
}
