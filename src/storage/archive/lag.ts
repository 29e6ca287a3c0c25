// Which compacted days this data dir has not yet published, and how far behind the archive is:
// answered from local files alone (manifests and archive-state/), so `/healthz` never waits on
// the bucket and loads no S3 client.

import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { ArchiveConfig } from '../../config.js';
import { listPartitions, partitionRel, readManifest, MANIFEST } from '../parquet/manifest.js';
import { isPublished, publishTarget, publishedDays } from './layout.js';

/** Days with at least one published local partition (a manifest), oldest first. */
export async function compactedDays(dataDir: string): Promise<string[]> {
  const days = new Set<string>();
  for (const p of await listPartitions(dataDir)) if (await readManifest(p.dir)) days.add(p.date);
  return [...days].sort();
}

/** The local partitions of `day` that have a manifest: rel path → folder. */
export async function dayPartitions(dataDir: string, day: string): Promise<Map<string, string>> {
  const ofDay = (await listPartitions(dataDir)).filter((p) => p.date === day);
  const has = await Promise.all(ofDay.map(async (p) => (await readManifest(p.dir)) !== null));
  return new Map(ofDay.filter((_, i) => has[i]).map((p) => [partitionRel(p.family, p.dataset, p.date), p.dir]));
}

/** Compacted days not yet published to `a` (or rebuilt locally since they were). */
export async function unpublishedDays(dataDir: string, a: ArchiveConfig): Promise<string[]> {
  const out: string[] = [];
  for (const day of await compactedDays(dataDir))
    if (!(await isPublished(dataDir, publishTarget(a).url, day, await dayPartitions(dataDir, day)))) out.push(day);
  return out;
}

export interface ArchiveLag {
  /** Compacted days not yet published. */
  readonly lag_days: number;
  /** Their bytes (Parquet files and manifests). */
  readonly lag_bytes: number;
  /** The newest day published from this data dir, or null. */
  readonly last_published: string | null;
}

export async function archiveLag(dataDir: string, a: ArchiveConfig): Promise<ArchiveLag> {
  const pending = await unpublishedDays(dataDir, a);
  let bytes = 0;
  for (const day of pending) {
    for (const dir of (await dayPartitions(dataDir, day)).values()) {
      const m = await readManifest(dir);
      bytes += (m?.files ?? []).reduce((n, f) => n + f.bytes, 0);
      bytes += await stat(join(dir, MANIFEST)).then(
        (s) => s.size,
        () => 0,
      );
    }
  }
  const pendingSet = new Set(pending);
  const done = (await publishedDays(dataDir)).filter((d) => !pendingSet.has(d));
  return { lag_days: pending.length, lag_bytes: bytes, last_published: done.at(-1) ?? null };
}
