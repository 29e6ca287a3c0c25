// `pmtape archive verify`: reads the archive back and checks every object against its manifest,
// and every manifest against its day record, from the bucket alone (no local data needed).

import type { ArchiveConfig } from '../../config.js';
import { DEFAULT_RETRY, explain, isFatal, listAll, withRetries, type RetryOptions, type S3Client } from './client.js';
import { getBytes, remoteDigest } from './objects.js';
import { dayRecordRel, dayRecordsPrefix, manifestRel, objectKey, sha256Hex, type DayRecord } from './layout.js';

export interface VerifyCounts {
  days: number;
  files: number;
  ok: number;
  bytes: number;
  failed: number;
  /** One line per mismatch or missing object. */
  problems: string[];
}

/** The days the archive holds a day record for, oldest first. */
export async function archivedDays(s3: S3Client, a: ArchiveConfig, retry: RetryOptions = DEFAULT_RETRY): Promise<string[]> {
  const prefix = dayRecordsPrefix(a);
  const out: string[] = [];
  for (const o of (await listAll(s3, a.bucket, prefix, { retry })).objects) {
    const m = /^(\d{4}-\d{2}-\d{2})\.json$/.exec(o.key.slice(prefix.length));
    if (m) out.push(m[1]);
  }
  return out.sort();
}

export interface VerifyHooks {
  /** Told how many objects will be checked once the day records and manifests are read. */
  readonly onPlanned?: (objects: number) => void;
  readonly onObject?: (key: string, ok: boolean) => void;
  readonly retry?: RetryOptions;
}

/**
 * Verifies `days` (default: every archived day); never throws for a mismatch, only counts it.
 * Day records and manifests are read (and checked) first, so the number of objects is known
 * before the data files, the bulk of the bytes, are read back.
 */
export async function verifyArchive(
  s3: S3Client,
  a: ArchiveConfig,
  days: readonly string[] | null,
  hooks: VerifyHooks = {},
): Promise<VerifyCounts> {
  const retry = hooks.retry ?? DEFAULT_RETRY;
  const c: VerifyCounts = { days: 0, files: 0, ok: 0, bytes: 0, failed: 0, problems: [] };
  const seen: [string, boolean][] = [];
  let report = (key: string, ok: boolean): void => void seen.push([key, ok]);
  const bad = (key: string, why: string): void => {
    c.failed++;
    c.problems.push(`${key}: ${why}`);
    report(key, false);
  };
  const good = (key: string, bytes: number): void => {
    c.ok++;
    c.bytes += bytes;
    report(key, true);
  };
  const read = (key: string): Promise<Buffer | null> => withRetries(key, () => getBytes(s3, a.bucket, key), retry);
  const data: { key: string; bytes: number; sha256: string }[] = [];
  try {
    for (const day of days ?? (await archivedDays(s3, a, retry))) {
      c.days++;
      const recKey = objectKey(a, dayRecordRel(day));
      const recBytes = await read(recKey);
      c.files++;
      if (!recBytes) {
        bad(recKey, 'missing: the day is not published');
        continue;
      }
      let rec: DayRecord;
      try {
        rec = JSON.parse(recBytes.toString('utf8')) as DayRecord;
      } catch {
        bad(recKey, 'not valid JSON');
        continue;
      }
      good(recKey, recBytes.length);
      for (const p of rec.partitions) {
        const mKey = objectKey(a, manifestRel(p));
        const mBytes = await read(mKey);
        c.files++;
        if (!mBytes) {
          bad(mKey, 'missing');
          continue;
        }
        if (sha256Hex(mBytes) !== p.manifest_sha256) {
          bad(mKey, `sha256 ${sha256Hex(mBytes)} differs from the day record's ${p.manifest_sha256}`);
          continue;
        }
        good(mKey, mBytes.length);
        const m = JSON.parse(mBytes.toString('utf8')) as { files: { file: string; bytes: number; sha256: string }[] };
        for (const f of m.files) data.push({ key: objectKey(a, `${p.path}/${f.file}`), bytes: f.bytes, sha256: f.sha256 });
      }
    }
    hooks.onPlanned?.(seen.length + data.length);
    for (const [key, ok] of seen) hooks.onObject?.(key, ok);
    report = (key, ok) => hooks.onObject?.(key, ok);
    for (const f of data) {
      c.files++;
      const d = await withRetries(f.key, () => remoteDigest(s3, a.bucket, f.key), retry);
      if (!d) bad(f.key, 'missing');
      else if (d.size !== f.bytes || d.sha256 !== f.sha256)
        bad(f.key, `sha256 ${d.sha256} (${d.size} bytes) differs from the manifest's ${f.sha256} (${f.bytes} bytes)`);
      else good(f.key, d.size);
    }
  } catch (e) {
    if (isFatal(e)) throw explain(e, a);
    throw e;
  }
  return c;
}
