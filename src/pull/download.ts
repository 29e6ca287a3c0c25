// Downloads one listed file into its staging name and publishes it: resumes a staged prefix with
// `Range: bytes=N-` + `If-Range: <etag>` (a file that changed on the server comes back whole),
// hashes while writing, refuses more bytes than listed, and only after the sha256 matches the
// listing fsyncs, renames into place and fsyncs the folder (LevelDB's CURRENT-file pattern).

import { createHash, type Hash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdir, open, rename, stat, type FileHandle } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { PullCache } from './cache.js';
import { dropStaged, readStaged, writeStaged } from './staged.js';
import { FatalError, networkMessage, TransientError, withRetries, type ClientOptions } from './client.js';
import type { LocalPaths } from './paths.js';
import type { PullSource } from './source.js';

/** A listing entry that passed validation. */
export interface FileEntry {
  readonly path: string;
  readonly bytes: number;
  readonly sha256: string;
}

export interface DownloadContext {
  readonly client: ClientOptions;
  readonly source: PullSource;
  readonly cache: PullCache;
  /** Bytes received over the network, as they arrive (progress and the summary). */
  readonly onBytes: (n: number) => void;
  readonly onRetry: (path: string, why: string, waitMs: number) => void;
}

/** sha256 of a file's first `length` bytes (all of it when omitted), read as a stream. */
export async function hashFile(file: string, length?: number): Promise<Hash> {
  const h = createHash('sha256');
  if (length === 0) return h;
  for await (const chunk of createReadStream(file, length === undefined ? {} : { start: 0, end: length - 1 })) h.update(chunk as Buffer);
  return h;
}

async function fsyncDir(dir: string): Promise<void> {
  const fh = await open(dir, 'r');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

/** How many staged bytes may be resumed: a prefix of this very file, with an ETag to check it by. */
async function resumable(e: FileEntry, part: string): Promise<{ from: number; etag: string | null }> {
  const staged = await readStaged(part);
  const size = (await stat(part).catch(() => null))?.size ?? 0;
  if (size > 0 && staged && staged.sha256 === e.sha256 && staged.bytes === e.bytes && staged.etag !== null && size <= e.bytes) {
    return { from: size, etag: staged.etag };
  }
  await dropStaged(part); // another file's bytes, or bytes that cannot be checked: start over
  return { from: 0, etag: null };
}

/** The bytes of `Content-Range: bytes a-b/total` must be exactly the rest of the file. */
function checkContentRange(header: string | null, from: number, total: number): void {
  const m = /^bytes (\d+)-(\d+)\/(\d+)$/.exec(header ?? '');
  if (!m || Number(m[1]) !== from || Number(m[2]) !== total - 1 || Number(m[3]) !== total) {
    throw new TransientError(`asked for bytes ${from}- of ${total}, got Content-Range "${header ?? ''}"`);
  }
}

/**
 * One request that continues the staged file. Resolves when the staging file holds all listed
 * bytes (fsynced) and returns their sha256 hex and whether it resumed; TransientError when the
 * transfer broke off (the staged bytes stay for the next try), FatalError on a refusal.
 */
async function transfer(ctx: DownloadContext, e: FileEntry, part: string): Promise<{ sha256: string; resumed: boolean }> {
  const staged = await resumable(e, part);
  let from = staged.from;
  let hash: Hash;
  let fh: FileHandle;
  if (from > 0 && from === e.bytes) {
    hash = await hashFile(part, from); // staged completely by an earlier run that stopped before publishing
    return { sha256: hash.digest('hex'), resumed: true };
  }
  const idle = new AbortController();
  const signal = ctx.client.signal ? AbortSignal.any([ctx.client.signal, idle.signal]) : idle.signal;
  let timer = setTimeout(() => idle.abort(), ctx.client.idleTimeoutMs);
  try {
    const res = await ctx.source.open(e.path, from, staged.etag, signal);
    if (res.status === 416) {
      await res.discard();
      await dropStaged(part);
      throw new TransientError(`the server refused the range bytes=${from}- (416); starting over`);
    }
    if (res.status === 206) {
      try {
        checkContentRange(res.contentRange, from, e.bytes);
      } catch (err) {
        await dropStaged(part); // the next try asks for the whole file
        throw err;
      }
    }
    if (res.status === 206 && from > 0) {
      hash = await hashFile(part, from);
      fh = await open(part, 'r+');
    } else {
      // The whole file: first try, or If-Range found that the file changed since it was staged.
      from = 0;
      hash = createHash('sha256');
      await mkdir(dirname(part), { recursive: true });
      await writeStaged(part, { sha256: e.sha256, bytes: e.bytes, etag: res.etag });
      fh = await open(part, 'w');
    }
    let at = from;
    try {
      if (!res.body) throw new TransientError('the response has no body');
      for await (const chunk of res.body) {
        clearTimeout(timer);
        timer = setTimeout(() => idle.abort(), ctx.client.idleTimeoutMs);
        if (at + chunk.length > e.bytes) throw new FatalError(`${ctx.source.name} sent more than the ${e.bytes} bytes the listing gives`);
        await fh.write(chunk, 0, chunk.length, at);
        hash.update(chunk);
        at += chunk.length;
        ctx.onBytes(chunk.length);
      }
      if (at < e.bytes) throw new TransientError(`the transfer ended after ${at} of ${e.bytes} bytes`);
      await fh.sync();
    } catch (err) {
      if (err instanceof FatalError || err instanceof TransientError || ctx.client.signal?.aborted) throw err;
      const why = idle.signal.aborted ? `no data for ${ctx.client.idleTimeoutMs} ms` : networkMessage(err);
      throw new TransientError(`the transfer broke off after ${at} of ${e.bytes} bytes (${why})`);
    } finally {
      await fh.close();
    }
    return { sha256: hash.digest('hex'), resumed: from > 0 };
  } catch (err) {
    if (err instanceof Error && err.name === 'AbortError' && !ctx.client.signal?.aborted) {
      throw new TransientError(`no data for ${ctx.client.idleTimeoutMs} ms`);
    }
    throw err;
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Brings `e` into `paths.dest`, verified. Returns nothing on success; throws FatalError (the staged
 * file is removed: nothing partial is left) or, after the retries, TransientError (the staged file
 * stays, `_`-prefixed, so the next run resumes it).
 */
export async function download(ctx: DownloadContext, e: FileEntry, paths: LocalPaths): Promise<void> {
  try {
    let restarted = false;
    for (;;) {
      const got = await withRetries(
        ctx.client,
        () => transfer(ctx, e, paths.part),
        (why, ms) => ctx.onRetry(e.path, why, ms),
      );
      if (got.sha256 === e.sha256) break;
      // A resumed prefix may come from bytes that are no longer the server's: start over once.
      if (got.resumed && !restarted) {
        restarted = true;
        await dropStaged(paths.part);
        continue;
      }
      throw new FatalError(
        `sha256 mismatch: ${ctx.source.name} sent ${e.bytes} bytes hashing to ${got.sha256}, the listing says ${e.sha256}`,
      );
    }
    ctx.cache.forgetVerified(e.path);
    await dropStaged(paths.part, true);
    await rename(paths.part, paths.dest);
    await fsyncDir(dirname(paths.dest));
    await ctx.cache.setVerified(e.path, paths.dest, e.sha256);
  } catch (err) {
    // Interrupted or broken off: keep the staged bytes to resume. Refused or wrong: leave nothing.
    if (!(err instanceof TransientError) && !ctx.client.signal?.aborted) {
      await dropStaged(paths.part);
    }
    throw err;
  }
}
