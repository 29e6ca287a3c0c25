// A stateless reader's view of the archive: `serve` on a machine without the recorder's data reads
// closed days from the bucket. Mounting lists the day records, fetches each partition's manifest
// (checked against the sha256 its day record names) into the data dir's `parquet/` tree, and names
// the markets they hold with empty market folders under `logs/`, so the read side finds the same
// tree a recorder host has after retention deleted its logs: every route takes its usual path. The
// part files stay in the bucket; their paths resolve to ranged reads through the disk cache
// (range-cache.ts), so only footers and the column chunks a request decodes are fetched.

import { GetObjectCommand } from '@aws-sdk/client-s3';
import { mkdir, readFile, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { ArchiveConfig } from '../../config.js';
import { writeFileDurable } from '../durable.js';
import { MANIFEST, type Manifest } from '../parquet/manifest.js';
import { addRemoteResolver, type RemoteFile } from '../parquet/remote-files.js';
import { streamOfDataset } from '../parquet/datasets.js';
import { encodeMarket, streamDir } from '../paths.js';
import { archiveClient, explain, listAll, withRetries, type S3Client } from './client.js';
import { dayRecordsPrefix, manifestRel, objectKey, sha256Hex, type DayRecord } from './layout.js';
import { RangeCache, type RangeStats } from './range-cache.js';

export interface ArchiveMount {
  /** Archived days mounted, ascending. */
  readonly days: () => readonly string[];
  /** Ranged reads so far (requests, bytes, disk-cache hits and evictions). */
  readonly stats: RangeStats;
  /** Bytes of blocks on disk now. */
  readonly cachedBytes: () => number;
  /** Lists the day records again and mounts days published since; returns the days added. */
  refresh(): Promise<string[]>;
  close(): void;
}

/** Where the disk cache of archive ranges lives in a reader's data dir. */
export const rangeCacheDir = (dataDir: string): string => join(dataDir, 'archive-cache');

async function getBytes(s3: S3Client, a: ArchiveConfig, key: string): Promise<Uint8Array> {
  return withRetries(`GET ${key}`, async () => {
    const r = await s3.send(new GetObjectCommand({ Bucket: a.bucket, Key: key }));
    return r.Body!.transformToByteArray();
  });
}

async function listDays(s3: S3Client, a: ArchiveConfig): Promise<string[]> {
  const out: string[] = [];
  for (const o of (await listAll(s3, a.bucket, dayRecordsPrefix(a))).objects) {
    const m = /(\d{4}-\d{2}-\d{2})\.json$/.exec(o.key);
    if (m) out.push(m[1]);
  }
  return out.sort();
}

/**
 * Mounts the archive `a` into `dataDir` (manifests and market folders only), with a disk cache of
 * at most `cacheBytes` for the ranges read. Throws with the archive named when the bucket cannot be
 * listed (no credentials, no bucket); a day whose manifest does not match its record is skipped
 * with a warning, never served.
 */
export async function mountArchive(
  dataDir: string,
  a: ArchiveConfig,
  cacheBytes: number,
  warn: (msg: string) => void = () => undefined,
): Promise<ArchiveMount> {
  const s3 = archiveClient(a);
  const cache = await RangeCache.open(s3, a.bucket, rangeCacheDir(dataDir), cacheBytes);
  const files = new Map<string, RemoteFile>();
  const mounted = new Set<string>();

  const mountDay = async (day: string): Promise<void> => {
    const rec = JSON.parse(Buffer.from(await getBytes(s3, a, objectKey(a, `_archive/days/${day}.json`))).toString('utf8')) as DayRecord;
    const manifests: { path: string; bytes: Uint8Array; m: Manifest }[] = [];
    for (const p of rec.partitions) {
      const bytes = await getBytes(s3, a, objectKey(a, manifestRel(p)));
      if (sha256Hex(bytes) !== p.manifest_sha256)
        throw new Error(`${objectKey(a, manifestRel(p))} does not match the sha256 its day record names`);
      manifests.push({ path: p.path, bytes, m: JSON.parse(Buffer.from(bytes).toString('utf8')) as Manifest });
    }
    for (const { path, m } of manifests) {
      for (const f of m.files) {
        const key = objectKey(a, `${path}/${f.file}`);
        files.set(join(dataDir, path, f.file), { size: f.bytes, id: f.sha256, read: (s, e) => cache.read(key, f.sha256, f.bytes, s, e) });
      }
      const stream = streamOfDataset(m.dataset);
      for (const market of Object.keys(m.sources))
        await mkdir(join(streamDir(dataDir, m.family, stream), encodeMarket(market)), { recursive: true });
    }
    // Manifests last: a partition appears to the read side only once its files resolve.
    for (const { path, bytes } of manifests) {
      const dir = join(dataDir, path);
      const have = await readFile(join(dir, MANIFEST)).catch(() => null);
      if (have && sha256Hex(have) === sha256Hex(bytes)) continue; // already there: keep the folder's mtime
      // Built aside and renamed in, as compaction publishes: no reader sees a folder without its manifest.
      const aside = `${dir}.mounting`;
      await rm(aside, { recursive: true, force: true });
      await mkdir(aside, { recursive: true });
      await writeFileDurable(join(aside, MANIFEST), bytes);
      await rm(dir, { recursive: true, force: true });
      await rename(aside, dir);
    }
    mounted.add(day);
  };

  const refresh = async (): Promise<string[]> => {
    const added: string[] = [];
    for (const day of await listDays(s3, a)) {
      if (mounted.has(day)) continue;
      try {
        await mountDay(day);
        added.push(day);
      } catch (e) {
        warn(`archive ${a.url}: ${day} not mounted: ${(e as Error).message}`);
      }
    }
    return added;
  };

  const remove = addRemoteResolver((path) => files.get(path) ?? null);
  try {
    await refresh();
  } catch (e) {
    remove();
    s3.destroy();
    throw explain(e, a);
  }
  return {
    days: () => [...mounted].sort(),
    stats: cache.stats,
    cachedBytes: () => cache.cachedBytes,
    refresh,
    close: () => {
      remove();
      s3.destroy();
    },
  };
}
