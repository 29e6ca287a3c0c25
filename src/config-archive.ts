// The `storage.archive` part of the config (API.md §9), apart so config.ts stays one screenful of
// fields. It reads no environment itself: config.ts hands it PMTAPE_ARCHIVE_URL/_ENDPOINT.

type Fail = (field: string, why: string) => Error;

function lagDays(v: unknown, fail: Fail): number {
  if (typeof v !== 'number' || !Number.isFinite(v) || v < 0) throw fail('storage.archive.max_lag_days', 'must be a number ≥ 0');
  return v;
}

/**
 * Where compacted days are published (API.md §9). Credentials are not here on purpose: the AWS
 * SDK's own chain (environment, profile, instance role) supplies them, so none is ever in a config
 * file or a log line.
 */
export interface ArchiveConfig {
  /** `s3://bucket/prefix` as given (prefix without leading or trailing slashes, may be empty). */
  readonly url: string;
  readonly bucket: string;
  readonly prefix: string;
  /** An S3-compatible endpoint (R2, MinIO, SeaweedFS...), or null for AWS itself. */
  readonly endpoint: string | null;
  readonly region: string;
  /** Path-style addressing (`endpoint/bucket/key`); default: on with an endpoint, off for AWS. */
  readonly pathStyle: boolean;
  /** `/healthz` says degraded when more closed days than this are not yet published (default 2). */
  readonly maxLagDays: number;
  /**
   * This recorder's id in an archive shared by several recorders (`storage.archive.recorder_id`,
   * env PMTAPE_RECORDER_ID), or null: the only recorder, publishing straight into the canonical
   * layout. With an id, closed days go under `recorders/<id>/` and `pmtape archive merge` builds
   * the canonical day from every recorder's (docs/redundancy.md).
   */
  readonly recorderId?: string | null;
}

/** A recorder id is one path segment: letters, digits, `_` and `-`, 1-64 characters, a letter or digit first. */
export const RECORDER_ID = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;

const ARCHIVE_KEYS = ['url', 'endpoint', 'region', 'path_style', 'max_lag_days', 'recorder_id'];

/** Parses `s3://bucket/prefix`; `field` names where it came from in the error. */
export function parseArchiveUrl(
  text: string,
  field: string,
  fail: Fail = (f, why) => new Error(`config: ${f} ${why}`),
): { bucket: string; prefix: string } {
  const m = /^s3:\/\/([^/]+)(?:\/(.*))?$/.exec(text.trim());
  const why = `must look like s3://<bucket>/<prefix> (e.g. s3://my-archive/pmtape), got "${text.slice(0, 80)}"`;
  if (!m) throw fail(field, why);
  // S3's bucket naming rules (lowercase letters, digits, dots, hyphens; 3-63 characters).
  if (!/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(m[1])) {
    throw fail(field, `has bucket "${m[1]}": a bucket name is 3-63 lowercase letters, digits, dots or hyphens`);
  }
  const prefix = (m[2] ?? '').replace(/^\/+|\/+$/g, '');
  if (prefix.split('/').some((p) => p === '.' || p === '..') || /\/\//.test(prefix)) throw fail(field, why);
  return { bucket: m[1], prefix };
}

function recorderIdOf(v: unknown, envText: string | undefined, fail: Fail): string | null {
  const env = envText?.trim() || undefined;
  const field = env !== undefined ? 'PMTAPE_RECORDER_ID' : 'storage.archive.recorder_id';
  const id = env ?? v;
  if (id === undefined || id === null) return null;
  if (typeof id !== 'string' || !RECORDER_ID.test(id)) {
    throw fail(
      field,
      `must be 1-64 letters, digits, "_" or "-" (a letter or digit first), like "rec-a", got ${JSON.stringify(id).slice(0, 80)}`,
    );
  }
  return id;
}

export function archiveOf(
  v: unknown,
  envUrlText: string | undefined,
  envEndpointText: string | undefined,
  fail: Fail,
  envRecorderText?: string,
): ArchiveConfig | null {
  if (v !== undefined && v !== null && (typeof v !== 'object' || Array.isArray(v)))
    throw fail('storage.archive', 'must be an object like {"url": "s3://bucket/prefix"}');
  const o = (v ?? {}) as Record<string, unknown>;
  for (const k of Object.keys(o)) {
    if (!ARCHIVE_KEYS.includes(k)) throw fail(`storage.archive.${k}`, `is not a known field (known: ${ARCHIVE_KEYS.join(', ')})`);
  }
  const envUrl = envUrlText?.trim() || undefined;
  const envEndpoint = envEndpointText?.trim() || undefined;
  if (o.url !== undefined && typeof o.url !== 'string') throw fail('storage.archive.url', 'must be a string like "s3://bucket/prefix"');
  const url = envUrl ?? o.url;
  if (url === undefined) {
    if (envEndpoint !== undefined)
      throw fail('PMTAPE_ARCHIVE_ENDPOINT', 'is set but no archive is: set PMTAPE_ARCHIVE_URL (or storage.archive.url) too');
    if (envRecorderText?.trim())
      throw fail(
        'PMTAPE_RECORDER_ID',
        'is set but no archive is: a recorder id names a recorder in a shared archive; set PMTAPE_ARCHIVE_URL too',
      );
    if (v !== undefined && v !== null) throw fail('storage.archive.url', 'is missing: an archive needs "url": "s3://bucket/prefix"');
    return null;
  }
  const { bucket, prefix } = parseArchiveUrl(url, envUrl !== undefined ? 'PMTAPE_ARCHIVE_URL' : 'storage.archive.url', fail);
  const endpointField = envEndpoint !== undefined ? 'PMTAPE_ARCHIVE_ENDPOINT' : 'storage.archive.endpoint';
  const endpoint = envEndpoint ?? (o.endpoint as string | undefined) ?? null;
  if (endpoint !== null) {
    let ok = typeof endpoint === 'string';
    try {
      ok = ok && /^https?:$/.test(new URL(endpoint).protocol);
    } catch {
      ok = false;
    }
    if (!ok)
      throw fail(
        endpointField,
        `must be an http(s):// URL like https://<account>.r2.cloudflarestorage.com, got ${JSON.stringify(endpoint).slice(0, 80)}`,
      );
  }
  if (o.region !== undefined && (typeof o.region !== 'string' || !/^[a-z0-9-]{1,40}$/.test(o.region))) {
    throw fail('storage.archive.region', 'must be a region name like "us-east-1" (R2: "auto")');
  }
  if (o.path_style !== undefined && typeof o.path_style !== 'boolean') throw fail('storage.archive.path_style', 'must be true or false');
  return Object.freeze({
    url: `s3://${bucket}${prefix ? `/${prefix}` : ''}`,
    bucket,
    prefix,
    endpoint: endpoint === null ? null : endpoint.replace(/\/+$/, ''),
    region: o.region ?? 'us-east-1',
    pathStyle: o.path_style ?? endpoint !== null,
    maxLagDays: o.max_lag_days === undefined ? 2 : lagDays(o.max_lag_days, fail),
    recorderId: recorderIdOf(o.recorder_id, envRecorderText, fail),
  });
}
