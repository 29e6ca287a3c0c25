// Where things are in the bucket and what this data dir remembers of it. The bucket mirrors the
// local Hive tree under `<prefix>/parquet/`; `<prefix>/_archive/days/<date>.json` (the day record)
// is written last and lists the day's partitions and their manifests' sha256: a day is published
// when, and only when, its record exists. Locally, `archive-state/<date>.json` remembers what was
// published and verified, so retention and the lag need no request to the bucket.

import { createHash, randomBytes } from 'node:crypto';
import { link, mkdir, readFile, unlink } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import type { ArchiveConfig } from '../../config.js';
import { prepareDurable, replaceFile, writeFileDurable, type PreparedWrite } from '../durable.js';
import { MANIFEST, readdirOrEmpty } from '../parquet/manifest.js';

export const objectKey = (a: ArchiveConfig, rel: string): string => (a.prefix ? `${a.prefix}/${rel}` : rel);
export const dayRecordRel = (day: string): string => `_archive/days/${day}.json`;
export const dayRecordsPrefix = (a: ArchiveConfig): string => objectKey(a, '_archive/days/');

/** The day record: deterministic bytes (no timestamp), so a rerun finds it unchanged and skips it. */
export interface DayRecord {
  readonly date: string;
  /** Who published the day (absent in records written before it was recorded): see DayWriter. */
  readonly writer?: DayWriter;
  readonly partitions: readonly {
    readonly path: string;
    readonly manifest_sha256: string;
    /**
     * The object name of the partition's manifest in its folder, when it is not `_manifest.json`: a
     * merged day published again (`archive merge --replace`) names its objects anew, so readers
     * of the day it replaces keep theirs until the new day record is written (merge/merge.ts).
     */
    readonly manifest?: string;
    readonly files: number;
    readonly bytes: number;
  }[];
}

/**
 * The publisher of a day record: a recorder's data dir (`id`: a random name the data dir keeps, so
 * two recorders publishing into one prefix are told apart), or a merge (`archive merge`). `host` is
 * for the humans reading a refusal; identity is `id` alone, so a new hostname (a container's
 * restart) or a data dir moved to another path is still the same recorder.
 */
export interface DayWriter {
  readonly kind: 'recorder' | 'merge';
  readonly host: string;
  readonly id: string;
}

const WRITER_ID = 'writer-id';

/**
 * The writer identity of this data dir: its id is created once (16 random hex digits, linked into
 * place so two processes starting together agree on one) and kept in `archive-state/writer-id`.
 */
export async function recorderWriter(dataDir: string): Promise<DayWriter> {
  const path = join(stateDir(dataDir), WRITER_ID);
  const read = async (): Promise<string | null> => {
    const text = await readFile(path, 'utf8').catch(() => null);
    const id = text?.trim() ?? '';
    return /^[0-9a-f]{16}$/.test(id) ? id : null;
  };
  let id = await read();
  if (id === null) {
    await mkdir(stateDir(dataDir), { recursive: true });
    const tmp = `${path}.${process.pid}.${randomBytes(4).toString('hex')}`;
    await writeFileDurable(tmp, `${randomBytes(8).toString('hex')}\n`);
    // link() fails when another process linked its id first: then both use that one.
    await link(tmp, path).catch((e: NodeJS.ErrnoException) => {
      if (e.code !== 'EEXIST') throw e;
    });
    await unlink(tmp).catch(() => undefined);
    id = await read();
    if (id === null) throw new Error(`${path} holds no writer id (16 hex digits): delete it and run again`);
  }
  return { kind: 'recorder', host: hostname(), id };
}

/** The key (relative to the prefix) of a day record's partition manifest. */
export const manifestRel = (p: { readonly path: string; readonly manifest?: string }): string => `${p.path}/${p.manifest ?? MANIFEST}`;

/** What this data dir published of a day, to which archive, and each partition's manifest sha256. */
export interface PublishedState {
  readonly url: string;
  readonly date: string;
  readonly manifests: Readonly<Record<string, string>>;
}

export const stateDir = (dataDir: string): string => join(dataDir, 'archive-state');

export async function readPublished(dataDir: string, day: string): Promise<PublishedState | null> {
  try {
    return JSON.parse(await readFile(join(stateDir(dataDir), `${day}.json`), 'utf8')) as PublishedState;
  } catch {
    return null; // absent or torn: counts as not published, the next sync checks the bucket again
  }
}

export async function writePublished(dataDir: string, s: PublishedState): Promise<void> {
  await mkdir(stateDir(dataDir), { recursive: true });
  await writeFileDurable(join(stateDir(dataDir), `${s.date}.json`), JSON.stringify(s) + '\n');
}

/**
 * writePublished in two steps: written and fsynced now (while the day record is in flight), made
 * the day's state by `commit` once the record is verified in the bucket (publish.ts).
 */
export async function preparePublished(dataDir: string, s: PublishedState): Promise<PreparedWrite> {
  await mkdir(stateDir(dataDir), { recursive: true });
  return prepareDurable(join(stateDir(dataDir), `${s.date}.json`), JSON.stringify(s) + '\n');
}

const uploadsFile = (dataDir: string, day: string): string => join(stateDir(dataDir), `${day}.uploads.json`);

const readUploadsNote = async (dataDir: string, day: string): Promise<string[]> => {
  const urls = await readFile(uploadsFile(dataDir, day), 'utf8').then(
    (t) => (JSON.parse(t) as { urls?: unknown }).urls,
    () => null,
  );
  return Array.isArray(urls) ? urls.filter((u): u is string => typeof u === 'string') : [];
};

/**
 * Whether uploads of `day` to `url` may have begun from this data dir: its note (noteUploads) names
 * `url`, or a publication of the day to `url` is recorded. When not, nothing this data dir uploaded
 * can be in the bucket, so the publication skips the listings that find what a killed run left. An
 * object there from elsewhere (another writer, a data dir whose state was lost) is then uploaded
 * again instead of compared: the same end state, only more bytes sent.
 */
export async function uploadsBegun(dataDir: string, url: string, day: string): Promise<boolean> {
  const [urls, published] = await Promise.all([readUploadsNote(dataDir, day), readPublished(dataDir, day)]);
  return urls.includes(url) || published?.url === url;
}

/**
 * Notes that uploads of `day` to `url` begin: written before the first one is sent, so a killed
 * run's rerun lists what landed. Not fsynced: a note lost with the machine (absent, empty or torn)
 * reads as "not begun", and that rerun sends every object again, the same end state.
 */
export async function noteUploads(dataDir: string, url: string, day: string): Promise<void> {
  const urls = await readUploadsNote(dataDir, day);
  if (urls.includes(url)) return;
  await mkdir(stateDir(dataDir), { recursive: true });
  await replaceFile(uploadsFile(dataDir, day), JSON.stringify({ urls: [...urls, url] }) + '\n');
}

export async function publishedDays(dataDir: string): Promise<string[]> {
  return (await readdirOrEmpty(stateDir(dataDir)))
    .filter((n) => /^\d{4}-\d{2}-\d{2}\.json$/.test(n))
    .map((n) => n.slice(0, 10))
    .sort();
}

export const sha256Hex = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');

/** The sha256 of a partition folder's manifest bytes, or null without one. */
export async function manifestSha(dir: string): Promise<string | null> {
  const b = await readFile(join(dir, MANIFEST)).catch(() => null);
  return b ? sha256Hex(b) : null;
}

/**
 * True when every one of `partitions` (rel path → folder) is recorded as published to `url` with
 * the manifest it has now: a partition rebuilt since (new manifest) counts as not published.
 */
export async function isPublished(dataDir: string, url: string, day: string, partitions: ReadonlyMap<string, string>): Promise<boolean> {
  const shas = new Map<string, string | null>();
  for (const [rel, dir] of partitions) shas.set(rel, await manifestSha(dir));
  return publishedWith(dataDir, url, day, shas);
}

/**
 * isPublished for manifests already read (rel path → sha256 of its bytes; null: no partition
 * there, nothing to publish, an empty dataset of the day).
 */
export async function publishedWith(dataDir: string, url: string, day: string, shas: ReadonlyMap<string, string | null>): Promise<boolean> {
  const s = await readPublished(dataDir, day);
  if (!s || s.url !== url) return false;
  for (const [rel, sha] of shas) if (sha !== null && s.manifests[rel] !== sha) return false;
  return true;
}

const errorsFile = (dataDir: string): string => join(stateDir(dataDir), 'upload-errors.json');

/** Failed upload attempts (retried or not) by every process publishing from this data dir. */
export async function uploadErrors(dataDir: string): Promise<number> {
  try {
    const n = (JSON.parse(await readFile(errorsFile(dataDir), 'utf8')) as { total?: unknown }).total;
    return typeof n === 'number' && Number.isFinite(n) ? n : 0;
  } catch {
    return 0;
  }
}

/** Adds to the counter (read, add, atomic rewrite: two publishers at once may lose a few counts). */
export async function addUploadErrors(dataDir: string, n: number): Promise<void> {
  if (n <= 0) return;
  await mkdir(stateDir(dataDir), { recursive: true });
  await writeFileDurable(errorsFile(dataDir), JSON.stringify({ total: (await uploadErrors(dataDir)) + n }) + '\n');
}

/**
 * Where this data dir publishes its closed days: the archive itself, or, for a recorder with an id
 * in a shared archive, `<prefix>/recorders/<id>` (its own day records and manifests there, merged
 * into the canonical layout by `pmtape archive merge`). Local state and the lag name this URL.
 */
export function publishTarget(a: ArchiveConfig): ArchiveConfig {
  if (!a.recorderId) return a;
  return { ...a, prefix: objectKey(a, recorderRel(a.recorderId)), url: `${a.url}/${recorderRel(a.recorderId)}`, recorderId: null };
}

export const recorderRel = (id: string): string => `recorders/${id}`;
