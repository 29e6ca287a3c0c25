// Which compacted days this data dir has not yet published, and how far behind the archive is:
// answered from local files alone (manifests and archive-state/), so `/healthz` never waits on
// the bucket and loads no S3 client.

import type { ArchiveConfig } from '../../config.js';
import { dayManifests, listPartitions, readManifest, type DayManifest } from '../parquet/manifest.js';
import { publishTarget, publishedDays, publishedWith, sha256Hex } from './layout.js';

/** Days with at least one published local partition (a manifest), oldest first. */
export async function compactedDays(dataDir: string): Promise<string[]> {
  const days = new Set<string>();
  for (const p of await listPartitions(dataDir)) if (!days.has(p.date) && (await readManifest(p.dir))) days.add(p.date);
  return [...days].sort();
}

/**
 * Compacted days not yet published to `a` (or rebuilt locally since they were), each with its
 * manifests (read once per day: the history is walked once, whatever its length).
 */
async function pendingDays(dataDir: string, a: ArchiveConfig): Promise<{ day: string; manifests: DayManifest[] }[]> {
  const url = publishTarget(a).url;
  const out = [];
  for (const day of await compactedDays(dataDir)) {
    const manifests = await dayManifests(dataDir, day);
    if (!(await publishedWith(dataDir, url, day, new Map(manifests.map((m) => [m.rel, sha256Hex(m.bytes)]))))) out.push({ day, manifests });
  }
  return out;
}

/** Compacted days not yet published to `a` (or rebuilt locally since they were). */
export async function unpublishedDays(dataDir: string, a: ArchiveConfig): Promise<string[]> {
  return (await pendingDays(dataDir, a)).map((p) => p.day);
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
  const pending = await pendingDays(dataDir, a);
  let bytes = 0;
  for (const { manifests } of pending)
    for (const m of manifests) bytes += m.manifest.files.reduce((n, f) => n + f.bytes, 0) + m.bytes.length;
  const pendingSet = new Set(pending.map((p) => p.day));
  const done = (await publishedDays(dataDir)).filter((d) => !pendingSet.has(d));
  return { lag_days: pending.length, lag_bytes: bytes, last_published: done.at(-1) ?? null };
}
