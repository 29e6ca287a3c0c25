// Reading the archive as a consumer (`pmtape pull s3://…`): what it publishes, from its day records
// and manifests (each manifest checked against the sha256 its day record names), and one object's
// bytes, whole or from an offset. A bucket may be public: with no credentials anywhere in the AWS
// SDK's chain, requests go unsigned instead of failing.

import { GetObjectCommand, S3Client } from '@aws-sdk/client-s3';
import type { ArchiveConfig } from '../../config.js';
import { archiveClient, explain, isFatal, withRetries, type RetryOptions } from './client.js';
import { getBytes } from './objects.js';
import { dayRecordRel, manifestRel, objectKey, sha256Hex, type DayRecord } from './layout.js';
import { archivedDays } from './verify.js';

/** One data file the archive publishes: `path` is relative to `parquet/` (as `/v3/datasets` gives it). */
export interface ArchivedFile {
  readonly path: string;
  readonly bytes: number;
  readonly sha256: string;
}

export interface ArchiveFilters {
  readonly family?: string;
  readonly dataset?: string;
  readonly startDate?: string;
  readonly endDate?: string;
}

/** An object's bytes as a reader gets them: the whole object (200) or its tail from an offset (206). */
export interface ObjectBody {
  readonly status: 200 | 206;
  readonly etag: string | null;
  readonly contentRange: string | null;
  readonly body: AsyncIterable<Uint8Array>;
}

export interface ArchiveReader {
  readonly archive: ArchiveConfig;
  /** True when no credentials were found and requests go unsigned (a public bucket). */
  readonly anonymous: boolean;
  list(filters: ArchiveFilters, retry?: RetryOptions): Promise<ArchivedFile[]>;
  /**
   * The data file at `path`; from `from` when an `etag` to check the object by is given. Errors
   * carry `fatal: true` when no retry helps, `changed: true` when the object's ETag is no longer `etag`.
   */
  get(path: string, from: number, etag: string | null, signal?: AbortSignal): Promise<ObjectBody>;
  close(): void;
}

/** A client signing with the SDK chain's credentials, or unsigned when the chain has none. */
async function readerClient(a: ArchiveConfig): Promise<{ s3: S3Client; anonymous: boolean }> {
  const s3 = archiveClient(a, { maxAttempts: 3 });
  try {
    await s3.config.credentials();
    return { s3, anonymous: false };
  } catch {
    s3.destroy();
  }
  // No credentials: requests go out unsigned, which is what a public bucket accepts. The SDK always
  // signs, so it signs with a placeholder and the signature is taken off again before sending.
  const anon = new S3Client({
    region: a.region,
    endpoint: a.endpoint ?? undefined,
    forcePathStyle: a.pathStyle,
    maxAttempts: 3,
    credentials: { accessKeyId: 'anonymous', secretAccessKey: 'anonymous' },
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
  type Args = { request: { headers?: Record<string, string> } };
  const unsign =
    (next: (args: Args) => Promise<unknown>) =>
    async (args: Args): Promise<unknown> => {
      const headers = args.request.headers;
      if (headers)
        for (const h of Object.keys(headers))
          if (/^(authorization|x-amz-date|x-amz-security-token|x-amz-content-sha256)$/i.test(h)) delete headers[h];
      return next(args);
    };
  anon.middlewareStack.addRelativeTo(unsign as never, { relation: 'after', toMiddleware: 'httpSigningMiddleware', name: 'pmtapeUnsigned' });
  return { s3: anon, anonymous: true };
}

const SEGMENT = /^(family|dataset|date)=([^/]+)$/;

function partitionOf(path: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const s of path.split('/')) {
    const m = SEGMENT.exec(s);
    if (m) out[m[1]] = m[2];
  }
  return out;
}

export async function openArchiveReader(a: ArchiveConfig): Promise<ArchiveReader> {
  const { s3, anonymous } = await readerClient(a);
  const fail = (e: unknown): Error => (isFatal(e) ? explain(e, a) : (e as Error));
  return {
    archive: a,
    anonymous,
    async list(f, retry) {
      try {
        const files: ArchivedFile[] = [];
        const days = (await archivedDays(s3, a, retry)).filter((d) => (!f.startDate || d >= f.startDate) && (!f.endDate || d <= f.endDate));
        for (const day of days) {
          const recKey = objectKey(a, dayRecordRel(day));
          const recBytes = await withRetries(recKey, () => getBytes(s3, a.bucket, recKey), retry);
          if (!recBytes) throw new Error(`archive ${a.url}: the day record ${recKey} vanished while listing`);
          const rec = JSON.parse(recBytes.toString('utf8')) as DayRecord;
          for (const p of rec.partitions) {
            const part = partitionOf(p.path);
            if ((f.family && part.family !== f.family) || (f.dataset && part.dataset !== f.dataset)) continue;
            const mKey = objectKey(a, manifestRel(p));
            const mBytes = await withRetries(mKey, () => getBytes(s3, a.bucket, mKey), retry);
            if (!mBytes) throw new Error(`archive ${a.url}: ${mKey} is missing though ${recKey} lists it (run pmtape archive verify)`);
            if (sha256Hex(mBytes) !== p.manifest_sha256) {
              throw new Error(
                `archive ${a.url}: ${mKey} does not match the sha256 its day record ${recKey} names (run pmtape archive verify)`,
              );
            }
            const m = JSON.parse(mBytes.toString('utf8')) as { files: { file: string; bytes: number; sha256: string }[] };
            const rel = p.path.replace(/^parquet\//, '');
            for (const x of m.files) files.push({ path: `${rel}/${x.file}`, bytes: x.bytes, sha256: x.sha256 });
          }
        }
        return files;
      } catch (e) {
        throw fail(e);
      }
    },
    async get(path, from, etag, signal) {
      const Key = objectKey(a, `parquet/${path}`);
      try {
        const ranged = from > 0 && etag !== null;
        const r = await s3.send(
          new GetObjectCommand({
            Bucket: a.bucket,
            Key,
            ...(ranged ? { Range: `bytes=${from}-`, IfMatch: etag } : {}),
          }),
          { abortSignal: signal },
        );
        return {
          status: r.ContentRange ? 206 : 200,
          etag: r.ETag ?? null,
          contentRange: r.ContentRange ?? null,
          body: r.Body as AsyncIterable<Uint8Array>,
        };
      } catch (e) {
        const status = (e as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
        if (status === 412) throw Object.assign(new Error(`${Key} changed since its download started`), { changed: true });
        if (status === 404 || (e as Error).name === 'NoSuchKey')
          throw Object.assign(new Error(`${Key} is missing from the bucket though its manifest lists it`), { fatal: true });
        if (isFatal(e)) throw Object.assign(explain(e, a), { fatal: true });
        throw e;
      }
    },
    close: () => s3.destroy(),
  };
}
