// `pmtape pull`'s mirroring: list what the server publishes, check every listed path, skip local
// files that already hold the listed bytes (sha256, cached by the sidecar), download the rest with
// a bounded number in flight, and count the outcome. One file's failure never stops the others;
// local files the server does not list are never deleted (a first part the server renamed is moved
// aside, superseded.ts).

import { mkdir, stat } from 'node:fs/promises';
import { PullCache } from './cache.js';
import type { ClientOptions, ListFilters } from './client.js';
import { download, hashFile, type FileEntry } from './download.js';
import { localPaths, type LocalPaths } from './paths.js';
import { httpSource, type PullSource } from './source.js';
import { retireSuperseded } from './superseded.js';

export interface PullOptions extends Omit<ClientOptions, 'signal'> {
  readonly outDir: string;
  readonly filters: ListFilters;
  /** Where the files come from; default the pmtape server at `baseUrl`. */
  readonly source?: PullSource;
  /** Downloads in flight at once. */
  readonly concurrency: number;
  /** Hash every local file again instead of trusting the sidecar's fingerprints. */
  readonly rehash: boolean;
  readonly signal?: AbortSignal;
  /** Called once the listing is known: how many files and bytes it lists. */
  readonly onListed?: (files: number, bytes: number) => void;
  readonly onFile?: (path: string, outcome: 'downloaded' | 'skipped' | 'failed') => void;
  readonly onBytes?: (n: number) => void;
  /** One line for a human (stderr): a failure naming its file, a re-fetch, a retry. */
  readonly note: (line: string) => void;
}

/** The last stdout line of `pmtape pull`. `bytes` counts what came over the network in this run. */
export interface PullSummary {
  files: number;
  downloaded: number;
  skipped: number;
  bytes: number;
  failed: number;
}

const SHA256 = /^[0-9a-f]{64}$/;

/** A listing entry made safe to act on, or the reason it is refused. */
function validate(outDir: string, raw: { path: unknown; bytes: unknown; sha256: unknown }): { e: FileEntry; paths: LocalPaths } | string {
  const paths = localPaths(outDir, raw.path);
  if (typeof paths === 'string') return paths;
  if (typeof raw.bytes !== 'number' || !Number.isSafeInteger(raw.bytes) || raw.bytes < 0)
    return `the listing gives no valid size (${JSON.stringify(raw.bytes)})`;
  const sha = typeof raw.sha256 === 'string' ? raw.sha256.toLowerCase() : '';
  if (!SHA256.test(sha)) return `the listing gives no valid sha256 (${JSON.stringify(raw.sha256)?.slice(0, 80)})`;
  return { e: { path: raw.path as string, bytes: raw.bytes, sha256: sha }, paths };
}

/**
 * Whether the local copy already is the listed file. Trusted without reading: the sidecar's record
 * of the same size, mtime, ctime and inode verified against the same sha256. Otherwise the file is
 * hashed; a wrong size is a re-fetch without reading.
 */
async function upToDate(o: PullOptions, cache: PullCache, e: FileEntry, dest: string): Promise<boolean> {
  const st = await stat(dest).catch(() => null);
  if (!st) return false;
  if (!st.isFile()) throw new Error(`${dest} exists and is not a file; move it away to pull this file`);
  if (st.size !== e.bytes) {
    o.note(`${e.path}: the local copy has ${st.size} bytes, the server's ${e.bytes}: fetching it again`);
    return false;
  }
  if (!o.rehash && (await cache.trusts(e.path, dest, e.sha256))) return true;
  if ((await hashFile(dest)).digest('hex') === e.sha256) {
    await cache.setVerified(e.path, dest, e.sha256);
    return true;
  }
  o.note(`${e.path}: the local copy does not match its sha256: fetching it again`);
  return false;
}

/** Mirrors the listing into `o.outDir`. Throws only when the listing itself cannot be had. */
export async function pull(o: PullOptions): Promise<PullSummary> {
  const client: ClientOptions = { ...o };
  const onRetry = (what: string) => (why: string, ms: number) => o.note(`${what}: ${why}; retrying in ${(ms / 1000).toFixed(1)} s`);
  const source = o.source ?? httpSource(client);
  const listed = await source.list(o.filters, onRetry(o.source ? source.name : '/v3/datasets'));
  await mkdir(o.outDir, { recursive: true });
  const cache = await PullCache.open(o.outDir);
  const summary: PullSummary = { files: listed.length, downloaded: 0, skipped: 0, bytes: 0, failed: 0 };
  const fail = (path: unknown, why: string): void => {
    summary.failed++;
    o.note(`failed ${typeof path === 'string' ? path : JSON.stringify(path)}: ${why}`);
    o.onFile?.(String(path), 'failed');
  };

  const todo: { e: FileEntry; paths: LocalPaths }[] = [];
  const seen = new Set<string>();
  for (const raw of listed) {
    const v = validate(o.outDir, raw ?? {});
    if (typeof v === 'string') fail(raw?.path, `refused: ${v}`);
    else if (seen.has(v.paths.dest)) fail(v.e.path, 'listed twice');
    else {
      seen.add(v.paths.dest);
      todo.push(v);
    }
  }
  o.onListed?.(
    listed.length,
    todo.reduce((n, x) => n + x.e.bytes, 0),
  );

  const ctx = {
    client,
    source,
    cache,
    onBytes: (n: number) => {
      summary.bytes += n;
      o.onBytes?.(n);
    },
    onRetry: (path: string, why: string, ms: number) => onRetry(path)(why, ms),
  };
  let next = 0;
  let interrupted = 0;
  const inPlace = new Map<string, string>();
  const worker = async (): Promise<void> => {
    while (next < todo.length) {
      const { e, paths } = todo[next++];
      if (o.signal?.aborted) {
        interrupted++;
        summary.failed++;
        continue;
      }
      try {
        if (await upToDate(o, cache, e, paths.dest)) {
          summary.skipped++;
          inPlace.set(e.path, paths.dest);
          o.onFile?.(e.path, 'skipped');
          continue;
        }
        await download(ctx, e, paths);
        inPlace.set(e.path, paths.dest);
        summary.downloaded++;
        o.onFile?.(e.path, 'downloaded');
      } catch (err) {
        if (o.signal?.aborted) {
          interrupted++;
          summary.failed++;
        } else fail(e.path, (err as Error).message);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(o.concurrency, todo.length)) }, worker));
  const retired = await retireSuperseded(cache, inPlace, new Set(todo.map((x) => x.e.path))).catch((err: Error) => {
    o.note(`could not move superseded part files aside: ${err.message}`);
    return [];
  });
  for (const p of retired) o.note(`${p}: renamed by the server (now ...-0000.parquet); the old copy is kept as _<name>.superseded`);
  await cache.close().catch((err: Error) => o.note(`could not write the sidecar cache: ${err.message}`));
  if (interrupted > 0) o.note(`interrupted: ${interrupted} file(s) not finished; run the same command again to resume`);
  return summary;
}
