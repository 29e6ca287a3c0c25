// What the archive tests share: a compacted fixture day, a CLI runner with the archive's env, the
// bucket's listing, and the JSON summary line.

import { mkdtempSync, rmSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createHash } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GetObjectCommand, ListObjectsV2Command, type S3Client } from '@aws-sdk/client-s3';
import type { Test } from 'tap';
import { DAY_MS, utcDay } from '../../../src/schema/time.js';
import { compactDay } from '../../../src/storage/compaction/compact-day.js';
import { listPartitions, readManifest } from '../../../src/storage/parquet/manifest.js';
import { writeFixture } from '../../../tools/fixtures/compaction-logs.js';
import { runCliOnce } from '../../selfhost/helpers.js';
import { archiveEnv } from '../../../tools/fixtures/weed.js';

export const DAY = utcDay(Date.now() - 3 * DAY_MS);

/** A data dir holding one compacted day of sim-like records (every family and dataset). */
export async function compactedDay(t: Test, day = DAY, booksPerDay = 200): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'pmtape-archive-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  await writeFixture(dir, { days: [day], booksPerDay, bothOutcomes: true, spanMs: 600_000 });
  await compactDay(dir, day, { threads: 1 });
  return dir;
}

/** Every local partition file of the data dir (with manifests), keyed by its archive path. */
export async function localObjects(dataDir: string): Promise<Map<string, Buffer>> {
  const out = new Map<string, Buffer>();
  for (const p of await listPartitions(dataDir)) {
    const m = await readManifest(p.dir);
    if (!m) continue;
    const rel = `parquet/family=${p.family}/dataset=${p.dataset}/date=${p.date}`;
    for (const f of m.files) out.set(`${rel}/${f.file}`, await readFile(join(p.dir, f.file)));
    out.set(`${rel}/_manifest.json`, await readFile(join(p.dir, '_manifest.json')));
  }
  return out;
}

export async function listKeys(s3: S3Client, bucket: string, prefix = ''): Promise<string[]> {
  const out: string[] = [];
  let token: string | undefined;
  do {
    const r = await s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ContinuationToken: token }));
    for (const o of r.Contents ?? []) out.push(o.Key!);
    token = r.IsTruncated ? r.NextContinuationToken : undefined;
  } while (token);
  return out.sort();
}

export async function getObject(s3: S3Client, bucket: string, key: string): Promise<Buffer> {
  const r = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
  return Buffer.from(await r.Body!.transformToByteArray());
}

/**
 * What a reader trusting manifests would find wrong under `prefix`: every `_manifest*.json` there
 * must name only objects that exist, read back at their size and sha256. Returns the manifests
 * seen and one line per problem (none when every visible manifest is whole).
 */
export async function checkVisibleManifests(
  s3: S3Client,
  bucket: string,
  prefix: string,
): Promise<{ manifests: string[]; problems: string[] }> {
  const keys = await listKeys(s3, bucket, prefix);
  const manifests = keys.filter((k) => /\/_manifest(\.r[^/]*)?\.json$/.test(k));
  const problems: string[] = [];
  for (const mk of manifests) {
    const m = JSON.parse((await getObject(s3, bucket, mk)).toString('utf8')) as {
      files: { file: string; bytes: number; sha256: string }[];
    };
    for (const f of m.files) {
      const key = `${mk.slice(0, mk.lastIndexOf('/'))}/${f.file}`;
      if (!keys.includes(key)) {
        problems.push(`${mk} names ${f.file}, which is not in the bucket`);
        continue;
      }
      const b = await getObject(s3, bucket, key);
      const sha = createHash('sha256').update(b).digest('hex');
      if (b.length !== f.bytes || sha !== f.sha256)
        problems.push(`${key}: ${b.length} bytes, sha256 ${sha}; its manifest says ${f.bytes}, ${f.sha256}`);
    }
  }
  return { manifests, problems };
}

export interface Summary {
  days: number;
  files: number;
  uploaded: number;
  skipped: number;
  bytes: number;
  failed: number;
  ok?: number;
  /** Days refused because another recorder published them into the same prefix. */
  shared_prefix?: number;
}

/** Runs `pmtape archive ...` against `endpoint`; returns the exit code, output and last-line JSON. */
export async function archiveCli(
  args: string[],
  dataDir: string,
  endpoint: string,
  url: string,
): Promise<{ code: number | null; stdout: string; stderr: string; summary: Summary }> {
  const r = await runCliOnce(['archive', ...args, '--data-dir', dataDir], { env: archiveEnv(endpoint, url), timeoutMs: 300_000 });
  const last = r.stdout.trim().split('\n').at(-1) ?? '';
  let summary = {} as Summary;
  try {
    summary = JSON.parse(last) as Summary;
  } catch {
    // left empty: the assertions on it fail and print stdout/stderr
  }
  return { ...r, summary };
}
