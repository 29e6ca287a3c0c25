// The inputs of a merge: which recorders published a day under `recorders/<id>/`, and one
// recorder's day copied whole into a scratch data dir (every file checked against its manifest's
// sha256, every manifest against the day record), laid out as a recorder host's tree after
// retention (Parquet partitions and empty market folders), so the storage readers read it as usual.

import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { ArchiveConfig } from '../../config.js';
import type { Family } from '../../schema/observation.js';
import { MANIFEST, type Manifest } from '../parquet/manifest.js';
import { streamOfDataset, type Stream } from '../parquet/datasets.js';
import { encodeMarket, streamDir } from '../paths.js';
import { listAll, withRetries, type RetryOptions, type S3Client } from '../archive/client.js';
import { getBytes } from '../archive/objects.js';
import { dayRecordRel, manifestRel, objectKey, recorderRel, sha256Hex, type DayRecord } from '../archive/layout.js';

/** The archive of one recorder: the shared archive's `recorders/<id>/`. */
export function recorderArchive(a: ArchiveConfig, id: string): ArchiveConfig {
  return { ...a, prefix: objectKey(a, recorderRel(id)), url: `${a.url}/${recorderRel(id)}`, recorderId: null };
}

/** Ids of the recorders that published `day` (a day record under their prefix), sorted. */
export async function recordersOfDay(s3: S3Client, a: ArchiveConfig, day: string, retry: RetryOptions): Promise<string[]> {
  const prefix = objectKey(a, 'recorders/');
  const { prefixes } = await listAll(s3, a.bucket, prefix, { delimiter: '/', retry });
  const ids = prefixes.map((p) => p.slice(prefix.length).replace(/\/$/, ''));
  const out: string[] = [];
  for (const id of ids.sort()) {
    const rec = recorderArchive(a, id);
    const key = objectKey(rec, dayRecordRel(day));
    if (await withRetries(`GET ${key}`, () => getBytes(s3, a.bucket, key), retry)) out.push(id);
  }
  return out;
}

/** What a fetched day holds: per (family, stream), the markets with records. */
export type DayMarkets = Map<`${Family}|${Stream}`, Set<string>>;

async function getChecked(s3: S3Client, a: ArchiveConfig, key: string, sha256: string | null, retry: RetryOptions): Promise<Buffer> {
  return withRetries(
    `GET ${key}`,
    async () => {
      const b = await getBytes(s3, a.bucket, key);
      if (!b) throw Object.assign(new Error(`${key} is missing from the archive`), { fatal: true });
      if (sha256 !== null && sha256Hex(b) !== sha256) throw new Error(`${key} does not match its sha256 (read again)`);
      return b;
    },
    retry,
  );
}

/**
 * Copies the published `day` of archive `a` into `dataDir` (which must be empty). Throws when the
 * day is not published there or an object stays wrong after the retries.
 */
export async function fetchDay(
  s3: S3Client,
  a: ArchiveConfig,
  day: string,
  dataDir: string,
  retry: RetryOptions,
): Promise<{ markets: DayMarkets; bytes: number }> {
  const recBytes = await getChecked(s3, a, objectKey(a, dayRecordRel(day)), null, retry);
  const rec = JSON.parse(recBytes.toString('utf8')) as DayRecord;
  const markets: DayMarkets = new Map();
  let bytes = 0;
  for (const p of rec.partitions) {
    const mBytes = await getChecked(s3, a, objectKey(a, manifestRel(p)), p.manifest_sha256, retry);
    const m = JSON.parse(mBytes.toString('utf8')) as Manifest;
    const dir = join(dataDir, p.path);
    await mkdir(dir, { recursive: true });
    for (const f of m.files) {
      const b = await getChecked(s3, a, objectKey(a, `${p.path}/${f.file}`), f.sha256, retry);
      await writeFile(join(dir, f.file), b);
      bytes += b.length;
    }
    await writeFile(join(dir, MANIFEST), mBytes); // last: the partition is whole before readers see it
    if (m.dataset === 'book_snapshots') continue; // derived: the merge builds its own
    const stream = streamOfDataset(m.dataset);
    const k = `${m.family}|${stream}` as const;
    let set = markets.get(k);
    if (!set) markets.set(k, (set = new Set()));
    for (const market of Object.keys(m.sources)) {
      set.add(market);
      await mkdir(join(streamDir(dataDir, m.family, stream), encodeMarket(market)), { recursive: true });
    }
  }
  return { markets, bytes };
}
