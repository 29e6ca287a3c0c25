// The S3 client of the archive tier and the retry policy around it. The SDK retries each request
// itself (throttling, 5xx, resets); `withRetries` wraps whole operations (an upload plus its
// verification, a read-back) so a truncated body or a lost response is retried too.

import { createHash } from 'node:crypto';
import { DeleteObjectCommand, ListObjectsV2Command, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import type { ArchiveConfig } from '../../config.js';

export type { S3Client } from '@aws-sdk/client-s3';

export interface ClientOptions {
  /** Attempts per request inside the SDK (default 6). */
  readonly maxAttempts?: number;
  /** Socket idle time before a request counts as failed (default 60 s): a stalled server is retried. */
  readonly requestTimeoutMs?: number;
  /** Called for every failed attempt of a request, the ones the SDK retries itself included. */
  readonly onAttemptError?: (err: Error) => void;
}

export function archiveClient(a: ArchiveConfig, o: ClientOptions = {}): S3Client {
  const s3 = new S3Client({
    region: a.region,
    endpoint: a.endpoint ?? undefined,
    forcePathStyle: a.pathStyle,
    maxAttempts: o.maxAttempts ?? 6,
    retryMode: 'standard',
    // Checksums of our own (sha256 in metadata, ETag = MD5, read-backs): the SDK's default CRC
    // trailers are refused by several S3-compatible stores.
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    requestHandler: { connectionTimeout: 10_000, requestTimeout: o.requestTimeoutMs ?? 60_000 },
  });
  const onError = o.onAttemptError;
  if (onError) {
    // The deserialize step runs once per attempt, inside the SDK's retry loop.
    s3.middlewareStack.add(
      (next) => async (args) => {
        try {
          return await next(args);
        } catch (e) {
          const status = (e as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
          // A HEAD of an object not yet uploaded is no error, nor is the probe's refusal (checksPayloads).
          const probe = (args.input as { Key?: unknown }).Key;
          if (status !== 404 && !(typeof probe === 'string' && probe.endsWith(PAYLOAD_PROBE))) onError(e as Error);
          throw e;
        }
      },
      { step: 'deserialize', name: 'pmtapeAttemptErrors' },
    );
  }
  return s3;
}

export interface RetryOptions {
  readonly attempts: number;
  readonly baseMs: number;
  readonly maxMs: number;
  /** Called before each retry (for the upload-error counter and the log). */
  readonly onRetry?: (what: string, err: Error, attempt: number) => void;
}

export const DEFAULT_RETRY: RetryOptions = { attempts: 8, baseMs: 250, maxMs: 15_000 };

/** Errors no retry can fix: wrong credentials, no bucket, no permission. */
const FATAL = new Set([
  'AccessDenied',
  'InvalidAccessKeyId',
  'SignatureDoesNotMatch',
  'NoSuchBucket',
  'CredentialsProviderError',
  'InvalidBucketName',
  'AuthorizationHeaderMalformed',
  'PermanentRedirect',
  'LocalMismatch', // a local file unlike its manifest (objects.ts)
]);

export function isFatal(e: unknown): boolean {
  const name = (e as { name?: string; Code?: string }).name ?? '';
  return FATAL.has(name) || /Could not load credentials/i.test((e as Error).message ?? '');
}

/** The error an operator reads: names the archive and what to fix for the usual fatal ones. */
export function explain(e: unknown, a: ArchiveConfig): Error {
  const err = e as Error & { name?: string };
  const msg = err.message || err.name || String(e);
  if (/Could not load credentials/i.test(msg)) {
    return new Error(
      `archive ${a.url}: no credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE (the AWS SDK's usual chain)`,
    );
  }
  if (err.name === 'NoSuchBucket')
    return new Error(`archive ${a.url}: bucket "${a.bucket}" does not exist (create it, or fix storage.archive.url)`);
  if (err.name === 'LocalMismatch') return new Error(msg);
  if (err.name === 'InvalidAccessKeyId' || err.name === 'SignatureDoesNotMatch')
    return new Error(`archive ${a.url}: the credentials were refused (${err.name})`);
  return new Error(`archive ${a.url}: ${msg}`);
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Runs `fn`, retrying with capped, jittered exponential backoff unless the error is fatal. */
export async function withRetries<T>(what: string, fn: () => Promise<T>, o: RetryOptions = DEFAULT_RETRY): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (e) {
      if (attempt >= o.attempts || isFatal(e)) throw e;
      o.onRetry?.(what, e as Error, attempt);
      await sleep(Math.min(o.maxMs, o.baseMs * 2 ** (attempt - 1)) * (0.5 + Math.random() / 2));
    }
  }
}

/** One listed object: its key, size and ETag (quotes removed). */
export interface ListedObject {
  readonly key: string;
  readonly size: number;
  readonly etag: string;
}

/**
 * Everything under `prefix`, every page of the listing (continuation tokens followed, each page
 * retried): its objects, and with a `delimiter` the common prefixes (folders) under it instead of
 * their objects.
 */
export async function listAll(
  s3: S3Client,
  bucket: string,
  prefix: string,
  o: { readonly delimiter?: string; readonly retry?: RetryOptions } = {},
): Promise<{ objects: ListedObject[]; prefixes: string[] }> {
  const objects: ListedObject[] = [];
  const prefixes: string[] = [];
  let token: string | undefined;
  do {
    const r = await withRetries(
      `list ${prefix}`,
      () => s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, Delimiter: o.delimiter, ContinuationToken: token })),
      o.retry,
    );
    for (const x of r.Contents ?? []) if (x.Key) objects.push({ key: x.Key, size: x.Size ?? -1, etag: (x.ETag ?? '').replace(/"/g, '') });
    for (const x of r.CommonPrefixes ?? []) if (x.Prefix) prefixes.push(x.Prefix);
    token = r.IsTruncated ? r.NextContinuationToken : undefined;
  } while (token);
  return { objects, prefixes };
}

/** The key (relative to the archive's prefix) checksPayloads writes to; nothing stays there. */
export const PAYLOAD_PROBE = '_archive/payload-probe';

/** What a store answers to a body unlike its signed payload hash (AWS S3, MinIO, SeaweedFS, Ceph; R2). */
const PAYLOAD_REFUSED = new Set(['XAmzContentSHA256Mismatch', 'BadDigest']);

const probes = new WeakMap<S3Client, Map<string, Promise<boolean>>>();

/**
 * Whether the store checks a PUT's body against its signed payload hash (x-amz-content-sha256) and
 * refuses it when they differ: then a single PUT the store accepts is proof that it holds the bytes
 * of that sha256, and objects.ts skips the MD5 (Content-MD5 and the ETag) the proof would otherwise
 * need. Asked once per client and bucket with a PUT of a small body that names another body's
 * sha256 at `key`: refused with a checksum error → true; accepted → false (the object is deleted
 * again); anything else (a network failure, a permission error) → false, the MD5 proof is kept.
 */
export function checksPayloads(s3: S3Client, bucket: string, key: string): Promise<boolean> {
  let byBucket = probes.get(s3);
  if (!byBucket) probes.set(s3, (byBucket = new Map<string, Promise<boolean>>()));
  let p = byBucket.get(bucket);
  if (!p) {
    p = probePayloadCheck(s3, bucket, key);
    byBucket.set(bucket, p);
  }
  return p;
}

async function probePayloadCheck(s3: S3Client, bucket: string, key: string): Promise<boolean> {
  const put = new PutObjectCommand({
    Bucket: bucket,
    Key: key,
    Body: Buffer.from('pmtape: this PUT names the sha256 of another body; a store that checks payloads refuses it\n'),
    ContentType: 'text/plain',
  });
  const claimed = createHash('sha256').update('another body').digest('hex');
  put.middlewareStack.add(
    (next) => async (args) => {
      (args.request as { headers: Record<string, string> }).headers['x-amz-content-sha256'] = claimed;
      return next(args);
    },
    { step: 'build', name: 'pmtapePayloadProbe' },
  );
  try {
    await s3.send(put);
  } catch (e) {
    return PAYLOAD_REFUSED.has((e as { name?: string }).name ?? '');
  }
  await s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: key })).catch(() => undefined);
  return false;
}
