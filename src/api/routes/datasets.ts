// Parquet datasets for researchers (API.md §6): `GET /v3/datasets` lists published partition files
// from their manifests; `GET /v3/datasets/files/<path>` serves one through @fastify/static (Range,
// If-Range, 416) under the file's sha256 as its ETag. Only files a manifest lists are served, and only
// from inside the Parquet root, so nothing half-written and nothing outside it is ever read.

import { realpath } from 'node:fs/promises';
import { join, sep } from 'node:path';
import type { IncomingHttpHeaders } from 'node:http';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import fastifyStatic from '@fastify/static';
import { Type } from 'typebox';
import { invalidParameter, notFound, PmtapeError } from '../../errors.js';
import { FAMILIES, type Family } from '../../schema/observation.js';
import { familyOf } from '../../families/registry.js';
import { dayStartMs, toIsoOrNull } from '../../schema/time.js';
import {
  DATASETS,
  ROW_DATASETS,
  datasetRows,
  listPartitions,
  parquetRoot,
  partitionDir,
  partitionRel,
  readManifest,
  type Dataset,
  type ManifestFile,
  remoteFile,
} from '../../storage/index.js';
import { datasetsSkippedEntries } from '../../metrics.js';
import { sendRemoteFile } from './remote-file.js';
import { timeParam } from '../query/params.js';
import { errorResponses, listOf, oneOf, queryParam, typedQuery } from '../route-params.js';
import { socketWriter } from '../query/socket-writer.js';

const entrySchema = {
  type: 'object',
  properties: {
    path: { type: 'string' },
    rows: { type: 'integer' },
    bytes: { type: 'integer' },
    sha256: { type: 'string' },
    min_time: { type: ['string', 'null'] },
    max_time: { type: ['string', 'null'] },
  },
  required: ['path', 'rows', 'bytes', 'sha256', 'min_time', 'max_time'],
} as const;

const errors = errorResponses;

const arrowBody = (description: string): object => ({
  description,
  content: { 'application/vnd.apache.arrow.stream': { schema: { type: 'string', format: 'binary' } } },
});

const parquetBody = (description: string): object => ({
  description,
  content: { 'application/vnd.apache.parquet': { schema: { type: 'string', format: 'binary' } } },
});

const DATE = Type.Optional(Type.String({ maxLength: 32, description: 'UTC day YYYY-MM-DD (inclusive)' }));
const PATH = /^family=([a-z-]+)\/dataset=([a-z_]+)\/date=(\d{4}-\d{2}-\d{2})\/([A-Za-z0-9][A-Za-z0-9._-]{0,200}\.parquet)$/;

const LIST_QUERY = typedQuery({
  family: Type.Optional(oneOf(FAMILIES)),
  dataset: Type.Optional(oneOf(DATASETS)),
  start_date: DATE,
  end_date: DATE,
  limit: Type.Optional(queryParam.limit),
  cursor: Type.Optional(queryParam.cursor),
});
const ROWS_QUERY = typedQuery({
  family: oneOf(FAMILIES, { description: 'the family of the market' }),
  dataset: oneOf(ROW_DATASETS, {
    description: "which dataset's rows (book_snapshots: use /v3/replay types=book_snapshot_25_1s or the files)",
  }),
  market_id: Type.Optional(
    Type.String({ minLength: 1, maxLength: 200, description: 'market id, condition id or slug (coin, wallet-prediction)' }),
  ),
  ticker: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'the market (yesno-exchange)' })),
  start_time: Type.String({ ...queryParam.start_time, description: 'receive time, inclusive; required' }),
  end_time: Type.String({ ...queryParam.end_time, description: 'receive time, exclusive; required' }),
});
/** The longest range one rows request covers (it reads one partition or log per day). */
const MAX_ROWS_DAYS = 31;

const FILE_PARAMS = Type.Object({ '*': Type.String({ maxLength: 1024, description: 'a `path` from /v3/datasets' }) });

function dateParam(v: string | undefined, name: string): string | undefined {
  if (v === undefined) return undefined;
  if (dayStartMs(v) === null) throw invalidParameter(name, 'must be a UTC day like 2026-07-26');
  return v;
}

const isPaid = (req: FastifyRequest): boolean => req.apiKey?.plan === 'paid';
/** Whether a family's datasets need the paid plan (as its routes do: the family descriptor says). */
const needsPaid = (family: Family): boolean => familyOf(family).plan === 'paid';

const planRequired = (req: FastifyRequest): PmtapeError =>
  new PmtapeError(
    'plan_required',
    `Wallet-prediction datasets need the paid plan; the key "${req.apiKey?.name ?? ''}" is on the ${req.apiKey?.plan ?? 'free'} plan.`,
  );

const CONDITIONALS = ['if-match', 'if-none-match', 'if-modified-since', 'if-unmodified-since', 'if-range'] as const;

/**
 * Judges the request's conditions against the sha256 ETag (which @fastify/send cannot know: it makes
 * its own from size and mtime), then hides them from send so it only serves bytes and ranges.
 * Returns 'not-modified' for a matching If-None-Match, else whether a Range may be honoured
 * (If-Range naming another ETag, or a date, asks for the whole file).
 */
function judgeConditions(headers: IncomingHttpHeaders, etag: string): 'not-modified' | { rangesAllowed: boolean } {
  const inm = headers['if-none-match'];
  if (inm !== undefined && inm.split(',').some((t) => t.trim() === etag || t.trim() === `W/${etag}` || t.trim() === '*'))
    return 'not-modified';
  const ifRange = headers['if-range']; // a string: Node joins repeated headers
  const rangesAllowed = ifRange === undefined || String(ifRange).trim() === etag;
  for (const h of CONDITIONALS) delete headers[h];
  return { rangesAllowed };
}

/** The manifest entry of a requested path, or a 404/403 PmtapeError; the path never leaves the root. */
async function publishedFile(
  req: FastifyRequest,
  dataDir: string,
  rel: string,
): Promise<{ entry: ManifestFile; rel: string; name: string; path: string }> {
  const unknown = notFound(`No dataset file '${rel.slice(0, 300)}'; list files with /v3/datasets.`);
  const m = PATH.exec(rel);
  if (!m || !(FAMILIES as readonly string[]).includes(m[1]) || !(DATASETS as readonly string[]).includes(m[2]) || dayStartMs(m[3]) === null)
    throw unknown;
  const [family, dataset, date, name] = [m[1] as Family, m[2] as Dataset, m[3], m[4]];
  if (needsPaid(family) && !isPaid(req)) throw planRequired(req);
  // A symlink (of the file or of a folder above it) must still land inside the Parquet root: the
  // partition folder is checked before its manifest is read, the file before it is served.
  const root = await realpath(parquetRoot(dataDir)).catch(() => null);
  const inside = async (path: string): Promise<boolean> => {
    const real = await realpath(path).catch(() => null);
    return root !== null && real !== null && real.startsWith(root + sep);
  };
  const dir = partitionDir(dataDir, family, dataset, date);
  if (!(await inside(dir))) throw unknown;
  // A damaged manifest or entry (the listing skips it, see entryProblem) is no file, not a 500.
  const files: unknown = (await readManifest(dir).catch(() => null))?.files;
  const entry = Array.isArray(files)
    ? ((files as unknown[]).find((f) => (f as ManifestFile | null)?.file === name) as ManifestFile | undefined)
    : undefined;
  if (!entry || entryProblem(partitionRel(family, dataset, date), entry) !== null) throw unknown;
  // A stateless reader's part files stay in the archive: the manifest names them, the bucket has them.
  if (remoteFile(join(dir, name))) return { entry, rel, name, path: join(dir, name) };
  if (!(await inside(join(dir, name)))) throw unknown;
  return { entry, rel, name, path: join(dir, name) };
}

const isCount = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
const isTimeOrNull = (v: unknown): v is number | null =>
  v === null || (typeof v === 'number' && Number.isFinite(v) && v >= 0 && v < 8.64e15);

/**
 * Why a manifest entry cannot be listed, or null when it can: a listed path must be one the file
 * route serves (PATH: no `..`, no folder, a `.parquet` name), and every field must have its type
 * (a hand-edited or damaged manifest once made the whole listing a 500).
 */
export function entryProblem(rel: string, f: unknown): 'bad_field' | 'bad_name' | null {
  if (typeof f !== 'object' || f === null) return 'bad_field';
  const e = f as Record<string, unknown>;
  if (typeof e.file !== 'string' || !PATH.test(`${rel}/${e.file}`)) return 'bad_name';
  if (!isCount(e.rows) || !isCount(e.bytes) || typeof e.sha256 !== 'string' || !/^[0-9a-f]{64}$/.test(e.sha256)) return 'bad_field';
  if (!isTimeOrNull(e.min_time) || !isTimeOrNull(e.max_time)) return 'bad_field';
  return null;
}

/** Most distinct skipped entries remembered (each is logged and counted once). */
const MAX_REPORTED = 10_000;

export default async function datasetsRoutes(app: FastifyInstance): Promise<void> {
  const { dataDir } = app.pmtape.config;
  const reported = new Set<string>();
  /** Logs and counts a skipped entry the first time this process meets it. */
  const skip = (where: string, reason: 'bad_field' | 'bad_name' | 'bad_manifest' | 'outside_root', detail: string): void => {
    const key = `${where}\u0000${reason}\u0000${detail.slice(0, 300)}`;
    if (reported.has(key) || reported.size >= MAX_REPORTED) return;
    reported.add(key);
    datasetsSkippedEntries.inc({ reason });
    app.pmtape.log.warn({ partition: where, reason, entry: detail.slice(0, 300) }, 'dataset listing skips a manifest entry');
  };
  const root = parquetRoot(dataDir);
  // Only reply.sendFile (no routes of its own); the root is given per file, as it may not exist yet.
  await app.register(fastifyStatic, { serve: false });

  const api = app.withTypeProvider<TypeBoxTypeProvider>();
  api.get(
    '/datasets',
    {
      config: { plan: 'free' },
      schema: {
        description: 'Published Parquet partition files (from their manifests), oldest first.',
        querystring: LIST_QUERY,
        response: { 200: listOf(entrySchema), ...errors([400, 401, 403, 429]) },
      },
    },
    async (req) => {
      const qs = req.query;
      const start = dateParam(qs.start_date, 'start_date');
      const end = dateParam(qs.end_date, 'end_date');
      if (start && end && start > end) throw invalidParameter('start_date', 'must not be after end_date');
      if (qs.family !== undefined && needsPaid(qs.family) && !isPaid(req)) throw planRequired(req);
      const route = 'datasets';
      const after = qs.cursor !== undefined ? String(app.pmtape.cursors.decode(qs.cursor, route, qs).after ?? '') : '';
      const data: {
        key: string;
        path: string;
        rows: number;
        bytes: number;
        sha256: string;
        min_time: string | null;
        max_time: string | null;
      }[] = [];
      let next: string | null = null;
      const parts = (await listPartitions(dataDir, { family: qs.family, dataset: qs.dataset }))
        .filter((p) => (!start || p.date >= start) && (!end || p.date <= end) && (!needsPaid(p.family) || isPaid(req)))
        // Oldest first across families, so a researcher can sync day by day.
        .map((p) => ({ p, k: `${p.date}/${partitionRel(p.family, p.dataset, p.date)}` }))
        .sort((a, b) => (a.k < b.k ? -1 : a.k > b.k ? 1 : 0))
        .map((x) => x.p);
      const realRoot = await realpath(root).catch(() => null);
      for (const p of parts) {
        const rel = partitionRel(p.family, p.dataset, p.date);
        // The file route's rules: the folder must resolve inside the Parquet root (a symlinked
        // partition is not served, so it is not listed), the manifest must be readable JSON with a list.
        const real = await realpath(p.dir).catch(() => null);
        if (realRoot === null || real === null || !real.startsWith(realRoot + sep)) {
          skip(rel, 'outside_root', p.dir);
          continue;
        }
        const m: unknown = await readManifest(p.dir).catch((e: unknown) => (skip(rel, 'bad_manifest', String((e as Error).message)), null));
        const files = (m as { files?: unknown } | null)?.files;
        if (m !== null && !Array.isArray(files)) {
          skip(rel, 'bad_manifest', 'files is not a list');
          continue;
        }
        for (const [i, f] of ((files ?? []) as ManifestFile[]).entries()) {
          const problem = entryProblem(rel, f);
          if (problem) {
            skip(rel, problem, `#${i} ${JSON.stringify(f)}`);
            continue;
          }
          const path = `${rel}/${f.file}`;
          const key = `${p.date}/${path}`;
          if (key <= after) continue;
          if (data.length === qs.limit) {
            next = app.pmtape.cursors.encode(route, qs, { after: data[data.length - 1].key });
            break;
          }
          data.push({
            key,
            path,
            rows: f.rows,
            bytes: f.bytes,
            sha256: f.sha256,
            min_time: toIsoOrNull(f.min_time),
            max_time: toIsoOrNull(f.max_time),
          });
        }
        if (next) break;
      }
      return { data: data.map(({ key: _k, ...rest }) => rest), next_cursor: next };
    },
  );

  api.get(
    '/datasets/files/*',
    {
      config: { plan: 'free' },
      schema: {
        description:
          'Downloads one partition file listed by /v3/datasets. ETag is the quoted sha256 of the file; ' +
          'Range (one range), If-Range and If-None-Match are supported.',
        params: FILE_PARAMS,
        response: {
          200: parquetBody('the whole file'),
          206: parquetBody('the asked byte range (Content-Range)'),
          304: { description: 'If-None-Match matched the ETag', type: 'null' },
          ...errors([400, 401, 403, 404, 416, 429]),
        },
      },
    },
    async (req, reply) => {
      const { entry, rel, name, path } = await publishedFile(req, dataDir, req.params['*']);
      const etag = `"${entry.sha256}"`;
      void reply
        .header('ETag', etag)
        .header('Accept-Ranges', 'bytes')
        .header('Cache-Control', 'public, max-age=3600')
        .header('Content-Disposition', `attachment; filename="${name}"`);
      const judged = judgeConditions(req.raw.headers, etag);
      if (judged === 'not-modified') return reply.code(304).send(null);
      void reply.type('application/vnd.apache.parquet');
      const remote = remoteFile(path);
      if (remote) return sendRemoteFile(req, reply, remote, judged.rangesAllowed);
      return reply.sendFile(rel, parquetRoot(dataDir), {
        acceptRanges: judged.rangesAllowed,
        etag: false,
        lastModified: false,
        cacheControl: false,
        contentType: false,
        // Being replaced right now: the manifest and the file disagree for a moment, so refuse rather
        // than send bytes that do not match the ETag.
        onFile: (_path: string, stat: { size: number }) => {
          if (stat.size !== entry.bytes)
            throw notFound(`No dataset file '${rel}' right now (it is being replaced); list files with /v3/datasets.`);
        },
      });
    },
  );

  api.get(
    '/datasets/rows',
    {
      config: { plan: 'free', expensive: true },
      schema: {
        description:
          "One market's rows of one dataset with receive_time in [start_time, end_time), as one Arrow IPC stream " +
          "(application/vnd.apache.arrow.stream) with the dataset's Parquet schema: the rows DuckDB selects from the partitions, " +
          'from compacted days and logs alike. A read failure after the first byte closes the connection without the end-of-stream marker.',
        querystring: ROWS_QUERY,
        response: { 200: arrowBody('the rows, in seq order'), ...errors([400, 401, 403, 404, 429]) },
      },
    },
    async (req, reply) => {
      const qs = req.query;
      const d = familyOf(qs.family);
      if (needsPaid(qs.family) && !isPaid(req)) throw planRequired(req);
      const start = timeParam(qs, 'start_time')!;
      const end = timeParam(qs, 'end_time')!;
      if (start >= end) throw invalidParameter('start_time', 'must be before end_time');
      if (end - start > MAX_ROWS_DAYS * 86_400_000)
        throw invalidParameter('end_time', `must be at most ${MAX_ROWS_DAYS} days after start_time; split the range`);
      const param = d.replay.idParam;
      const other = param === 'ticker' ? 'market_id' : 'ticker';
      if (qs[other] !== undefined) throw invalidParameter(other, `does not apply to ${qs.family}; name its market with ${param}`);
      const id = qs[param];
      if (id === undefined) throw invalidParameter(param, 'is required');
      const found = await app.pmtape.markets.resolve(qs.family, id);
      const market = found?.market.market_id ?? (d.booksWithoutCatalog && (await app.pmtape.markets.hasBooks(qs.family, id)) ? id : null);
      if (market === null) throw notFound(d.routes.unknownMessage(id, d.routes.listUrl('{coin}')));

      const pieces = datasetRows(dataDir, { family: qs.family, dataset: qs.dataset, market, start, end });
      // The schema and the first piece are made before the status is sent: a failure there is answered
      // with the envelope. Later, the connection is closed without the end marker, so a reader fails
      // instead of taking a short table for the whole.
      const first = [(await pieces.next()).value as Uint8Array];
      const second = await pieces.next();
      if (!second.done) first.push(second.value);
      reply.hijack();
      const headers: Record<string, string | number | string[]> = {};
      for (const [k, v] of Object.entries(reply.getHeaders())) if (v !== undefined) headers[k] = v;
      reply.raw.writeHead(200, { ...headers, 'content-type': 'application/vnd.apache.arrow.stream', 'cache-control': 'no-store' });
      const out = socketWriter(reply);
      try {
        for (const p of first) if (!(await out.write(Buffer.from(p.buffer, p.byteOffset, p.byteLength)))) return;
        for await (const p of pieces) if (!(await out.write(Buffer.from(p.buffer, p.byteOffset, p.byteLength)))) return;
        reply.raw.end();
      } catch (err) {
        app.pmtape.log.error({ err, request_id: req.id }, 'dataset rows failed mid-stream');
        reply.raw.destroy();
      } finally {
        await pieces.return(undefined);
      }
    },
  );
}
