// Publishing one compacted day: each partition's data files (each one verified after upload), then,
// as soon as all of them are, that partition's manifest; the day record once every manifest is. A
// reader that trusts manifests never sees a partition with a missing file, and one that trusts day
// records (every pmtape reader) never sees half a day, whatever kills the run: a rerun skips every
// object the bucket already holds exactly and uploads the rest.

import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { ArchiveConfig } from '../../config.js';
import { MANIFEST, dayManifests } from '../parquet/manifest.js';
import {
  DEFAULT_RETRY,
  PAYLOAD_PROBE,
  checksPayloads,
  explain,
  isFatal,
  listAll,
  withRetries,
  type RetryOptions,
  type S3Client,
} from './client.js';
import { compare, digestBytes, upload, withEtags, type LocalObject } from './objects.js';
import {
  dayRecordRel,
  noteUploads,
  uploadsBegun,
  objectKey,
  recorderWriter,
  preparePublished,
  type DayRecord,
  type DayWriter,
} from './layout.js';
import { getBytes } from './objects.js';

export interface SyncCounts {
  days: number;
  files: number;
  uploaded: number;
  skipped: number;
  bytes: number;
  failed: number;
}

export const zeroCounts = (): SyncCounts => ({ days: 0, files: 0, uploaded: 0, skipped: 0, bytes: 0, failed: 0 });

export interface PublishHooks {
  /** After each object: uploaded, skipped (already there exactly) or failed (retries exhausted). */
  readonly onObject?: (key: string, outcome: 'uploaded' | 'skipped' | 'failed', bytes: number) => void;
  /** Retry policy per object; its onRetry sees every failed attempt (the upload-error counter). */
  readonly retry?: RetryOptions;
  /** Objects in flight at once (default 4). */
  readonly concurrency?: number;
  /** The day record's bytes at the plan's key (fetchDayRecord), when the caller started the GET early. */
  readonly dayRecord?: Promise<Buffer | null>;
  /** beginUploads of the plan's day, when the caller started it early (recorders only). */
  readonly begun?: Promise<boolean>;
  /** Told as each step of a publication ends (the bench's phase timings; a log could use it too). */
  readonly onPhase?: (phase: PublishPhase) => void;
}

/**
 * The steps of a run, in order: days planned (sync.ts), the bucket asked whether the day is another
 * recorder's, data files uploaded, manifests after them, the day record, the local state written,
 * the client closed (sync.ts).
 */
export type PublishPhase = 'planned' | 'checked' | 'data' | 'manifests' | 'record' | 'state' | 'closed';

interface PartitionPlan {
  readonly rel: string;
  readonly dir: string;
  readonly files: LocalObject[];
  readonly manifest: LocalObject;
}

export interface DayPlan {
  readonly day: string;
  /** Who publishes it (written into the day record). */
  readonly writer: DayWriter;
  readonly partitions: readonly PartitionPlan[];
  readonly record: LocalObject;
}

/** Objects a plan will upload or skip (data files, manifests, the day record). */
export const planSize = (p: DayPlan): number => p.partitions.reduce((n, x) => n + x.files.length + 1, 1);

const json = (v: unknown): Uint8Array => Buffer.from(JSON.stringify(v, null, 1) + '\n');

/** An object name of generation `gen` (see planDay): `x.parquet` → `x.r<gen>.parquet`. */
export const generationName = (name: string, gen: string): string => name.replace(/(\.[a-z]+)$/, `.r${gen}$1`);

/**
 * Lists the day's local partitions from their manifests. Refuses (throws) when a file is missing or
 * of another size; its checksum is proven while it uploads (or before it is skipped), in one read.
 * With `generation`, every object of the day is named anew (generationName; the manifests list the
 * new names and the day record names each manifest), so publishing never overwrites an object a
 * reader of an earlier publication of the day may still read.
 */
export async function planDay(dataDir: string, a: ArchiveConfig, day: string, writer?: DayWriter, generation?: string): Promise<DayPlan> {
  const named = (f: string): string => (generation === undefined ? f : generationName(f, generation));
  // Every manifest read and every file's size checked at once: planning waits on the disk, not the CPU.
  const [who, found] = await Promise.all([writer ?? recorderWriter(dataDir), dayManifests(dataDir, day)]);
  writer = who;
  const partitions = await Promise.all(
    found.map(async ({ rel, dir, bytes, manifest: m }): Promise<PartitionPlan> => {
      let mBytes = bytes;
      if (generation !== undefined)
        mBytes = Buffer.from(JSON.stringify({ ...m, files: m.files.map((f) => ({ ...f, file: named(f.file) })) }, null, 1));
      const files = await Promise.all(
        m.files.map(async (f): Promise<LocalObject> => {
          const path = join(dir, f.file);
          const size = await stat(path).then(
            (s) => s.size,
            () => null,
          );
          if (size !== f.bytes) {
            throw new Error(
              `${path} does not match its manifest (${size === null ? 'missing' : 'size differs'}): run \`pmtape verify --repair\` and compact again; nothing of ${day} was published`,
            );
          }
          return {
            key: objectKey(a, `parquet/${rel}/${named(f.file)}`),
            path,
            size,
            sha256: f.sha256,
            contentType: 'application/vnd.apache.parquet',
          };
        }),
      );
      const manifest: LocalObject = {
        key: objectKey(a, `parquet/${rel}/${named(MANIFEST)}`),
        body: mBytes,
        ...digestBytes(mBytes),
        contentType: 'application/json',
      };
      return { rel, dir, files, manifest };
    }),
  );
  const rec: DayRecord = {
    date: day,
    writer,
    partitions: partitions.map((p) => ({
      path: `parquet/${p.rel}`,
      manifest_sha256: p.manifest.sha256,
      ...(generation === undefined ? {} : { manifest: named(MANIFEST) }),
      files: p.files.length,
      bytes: p.files.reduce((n, f) => n + f.size, 0),
    })),
  };
  const body = json(rec);
  return {
    day,
    writer,
    partitions,
    record: { key: objectKey(a, dayRecordRel(day)), body, ...digestBytes(body), contentType: 'application/json' },
  };
}

/** Runs `fn` over `items` with at most `n` in flight; resolves once all settled. */
async function pool<T>(items: readonly T[], n: number, fn: (x: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) await fn(items[next++]);
  };
  await Promise.all(Array.from({ length: Math.min(n, items.length) }, worker));
}

type Listing = Map<string, { size: number; etag: string }>;

/** The prefix whose listing names `key`: its partition's folder, or the day record's own key. */
const listingPrefix = (key: string, plan: DayPlan): string => (key === plan.record.key ? key : key.slice(0, key.lastIndexOf('/') + 1));

/**
 * Size and ETag of every object under each of the day's partitions and of its day record, one
 * listing per prefix, all started at once: each object waits only for its own prefix's listing, so
 * the first uploads overlap the other listings. Every promise is marked handled: a listing nobody
 * waits for (its phase never came) must not become an unhandled rejection.
 */
function listDay(s3: S3Client, a: ArchiveConfig, plan: DayPlan, retry: RetryOptions): Map<string, Promise<Listing>> {
  const out = new Map<string, Promise<Listing>>();
  const list = async (prefix: string): Promise<Listing> => {
    const { objects } = await listAll(s3, a.bucket, prefix, { retry });
    return new Map(objects.map((o) => [o.key, { size: o.size, etag: o.etag }]));
  };
  for (const key of [...plan.partitions.map((p) => p.manifest.key), plan.record.key]) {
    const prefix = listingPrefix(key, plan);
    const p = list(prefix);
    p.catch(() => undefined);
    out.set(prefix, p);
  }
  return out;
}

/** The counts of one day, and what went wrong when `failed` > 0 (the day then stays unpublished). */
export interface DayResult extends SyncCounts {
  readonly errors: string[];
  /** Another recorder's day found where this one publishes: the day was not published (see sharedPrefix). */
  readonly conflicts: string[];
}

/** The day record of `day` at `a` (bytes), or null: what a recorder reads before publishing the day. */
export function fetchDayRecord(s3: S3Client, a: ArchiveConfig, day: string, retry: RetryOptions): Promise<Buffer | null> {
  const key = objectKey(a, dayRecordRel(day));
  return withRetries(`GET ${key}`, () => getBytes(s3, a.bucket, key), retry);
}

/**
 * Whether this is a recorder's first publication of `day` to `url` (nothing of it sent from this
 * data dir, so nothing to list): then it notes, before any upload, that uploads begin (layout.ts
 * noteUploads: not fsynced, its loss only costs a rerun its listings).
 * sync.ts starts it while the day is planned; a note left by a run that then sent nothing only
 * costs the next run its listings.
 */
export async function beginUploads(dataDir: string, url: string, day: string): Promise<boolean> {
  if (await uploadsBegun(dataDir, url, day)) return false;
  await noteUploads(dataDir, url, day);
  return true;
}

/**
 * Why `plan` must not replace the day record already at its key, or null: a recorder's day written
 * by another recorder (another host or data dir). Two recorders publishing into one prefix (no
 * recorder id, or the same one) would overwrite each other's days, each losing the other's records.
 */
async function sharedPrefix(a: ArchiveConfig, plan: DayPlan, record: () => Promise<Buffer | null>): Promise<string | null> {
  if (plan.writer.kind !== 'recorder') return null;
  const b = await record();
  if (!b) return null;
  let was: DayWriter | undefined;
  try {
    was = (JSON.parse(Buffer.from(b).toString('utf8')) as DayRecord).writer;
  } catch {
    return null; // not a day record we can read: publishing replaces it, as before
  }
  if (!was || was.kind !== 'recorder' || was.id === plan.writer.id) return null;
  return (
    `${plan.day} in ${a.url} was published by another recorder (host ${was.host}, data dir ${was.id}; this is host ` +
    `${plan.writer.host}, data dir ${plan.writer.id}): two recorders publish into one archive prefix and would overwrite ` +
    `each other's days. Give each recorder its own storage.archive.recorder_id (PMTAPE_RECORDER_ID; docs/redundancy.md); ` +
    `nothing of ${plan.day} was published from here`
  );
}

/**
 * Publishes one planned day: a partition's manifest once every data file of that partition is
 * uploaded and verified, the day record once every manifest is, then the local published state
 * (which retention waits for). Never throws for an object that would not upload: `failed` counts
 * them (its partition's manifest and the day record are then not written) and a rerun resumes; it
 * throws only for what no retry fixes (credentials, no bucket).
 */
export async function publishDay(
  s3: S3Client,
  a: ArchiveConfig,
  dataDir: string,
  plan: DayPlan,
  hooks: PublishHooks = {},
): Promise<DayResult> {
  const c: DayResult = { ...zeroCounts(), days: 1, errors: [], conflicts: [] };
  const retry = hooks.retry ?? DEFAULT_RETRY;
  // A recorder's first publication of the day to this archive has nothing to find in it: no
  // listings (layout.ts uploadsBegun); otherwise they start at once, beside the day record's GET.
  const fresh = plan.writer.kind === 'recorder' && (await (hooks.begun ?? beginUploads(dataDir, a.url, plan.day)));
  const listings = fresh ? null : listDay(s3, a, plan, retry);
  const checked = checksPayloads(s3, a.bucket, objectKey(a, PAYLOAD_PROBE));
  const conflict = await sharedPrefix(a, plan, () => hooks.dayRecord ?? fetchDayRecord(s3, a, plan.day, retry)).catch((e: unknown) => {
    if (isFatal(e)) throw explain(e, a);
    throw e;
  });
  hooks.onPhase?.('checked');
  if (conflict) {
    c.failed++;
    c.errors.push(`${plan.record.key}: ${conflict}`);
    c.conflicts.push(conflict);
    return c;
  }
  let fatal: unknown = null;
  // One listing per partition says what is there already (size and ETag, the server's MD5), in
  // place of a HEAD per object; a later attempt at an object asks the object itself.
  const nothing: Listing = new Map();
  /** True when `planned` is in the bucket, verified. */
  const put = async (planned: LocalObject): Promise<boolean> => {
    c.files++;
    let first = true;
    let o = planned;
    try {
      const listed = listings ? await listings.get(listingPrefix(o.key, plan))! : nothing;
      const outcome = await withRetries(
        o.key,
        async () => {
          const l = first ? listed.get(o.key) : undefined;
          // Only an object already there needs the local ETags before sending (a read of the file).
          if (l && l.size === o.size) o = await withEtags(o);
          const known = first && (!l || (l.size === o.size && (o.etags ?? []).includes(l.etag)));
          first = false;
          if (known && l) return 'skipped' as const;
          if (!known && (await compare(s3, a.bucket, o)) === 'same') return 'skipped' as const;
          await upload(s3, a.bucket, o, await checked);
          return 'uploaded' as const;
        },
        retry,
      );
      if (outcome === 'uploaded') {
        c.uploaded++;
        c.bytes += o.size;
      } else c.skipped++;
      hooks.onObject?.(o.key, outcome, outcome === 'uploaded' ? o.size : 0);
      return true;
    } catch (e) {
      c.failed++;
      c.errors.push(`${o.key}: ${(e as Error).message || (e as Error).name}`);
      if (isFatal(e)) fatal ??= e;
      hooks.onObject?.(o.key, 'failed', 0);
      return false;
    }
  };
  // Data files `concurrency` at a time; each manifest (small) starts as soon as its partition's
  // last file is verified, beside the other partitions' files, and only if all of them were.
  const left = new Map(plan.partitions.map((p) => [p, { files: p.files.length, ok: true }]));
  const manifests: Promise<boolean>[] = [];
  const settled = (p: PartitionPlan, ok: boolean): void => {
    const s = left.get(p)!;
    s.ok &&= ok;
    if (--s.files <= 0 && s.ok && !fatal) manifests.push(put(p.manifest));
  };
  for (const p of plan.partitions) if (p.files.length === 0) settled(p, true);
  // Biggest first: the last files to start are small ones, so the pool's workers finish together.
  const data = plan.partitions.flatMap((p) => p.files.map((f) => [p, f] as const)).sort(([, x], [, y]) => y.size - x.size);
  await pool(data, hooks.concurrency ?? 4, async ([p, f]) => {
    if (!fatal) settled(p, await put(f));
  });
  hooks.onPhase?.('data');
  await Promise.all(manifests);
  hooks.onPhase?.('manifests');
  if (fatal) throw explain(fatal, a);
  if (c.failed) return c;
  const published: Record<string, string> = {};
  for (const p of plan.partitions) published[p.rel] = p.manifest.sha256;
  // Only what is verified is recorded (a manifest changed since planning is caught next time). The
  // state is written and fsynced while the day record is in flight, and made the day's state only
  // once the record is verified.
  const state = preparePublished(dataDir, { url: a.url, date: plan.day, manifests: published });
  state.catch(() => undefined); // awaited below, after the record
  await put(plan.record);
  hooks.onPhase?.('record');
  if (fatal || c.failed) {
    await state.then((w) => w.abort()).catch(() => undefined);
    if (fatal) throw explain(fatal, a);
    return c;
  }
  await (await state).commit();
  hooks.onPhase?.('state');
  return c;
}
