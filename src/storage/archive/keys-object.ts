// The API keys' file shared through the bucket (`<prefix>/_archive/keys.json`): recorder hosts
// publish it with conditional requests (If-Match on the ETag they read, If-None-Match: * for the
// first), so two hosts changing keys at once never overwrite each other's change: the loser gets
// 412, reads again, merges and retries. Readers poll it with If-None-Match and copy a changed file
// into their data dir, where the server's key store picks it up. The file holds hashes, not keys.

import { GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { mkdir } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { ArchiveConfig } from '../../config.js';
import { writeFileDurable } from '../durable.js';
import { archiveClient, explain, type S3Client } from './client.js';
import { objectKey } from './layout.js';

export const keysObjectKey = (a: ArchiveConfig): string => objectKey(a, '_archive/keys.json');

const status = (e: unknown): number | undefined => (e as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;

/** The keys object and its ETag; null when absent; 'unchanged' when it still has `ifNoneMatch`. */
export async function readKeysObject(
  s3: S3Client,
  a: ArchiveConfig,
  ifNoneMatch?: string,
): Promise<{ body: string; etag: string } | null | 'unchanged'> {
  try {
    const r = await s3.send(new GetObjectCommand({ Bucket: a.bucket, Key: keysObjectKey(a), IfNoneMatch: ifNoneMatch }));
    return { body: await r.Body!.transformToString('utf8'), etag: r.ETag ?? '' };
  } catch (e) {
    if (status(e) === 304) return 'unchanged';
    if (status(e) === 404 || (e as Error).name === 'NoSuchKey') return null;
    throw e;
  }
}

/**
 * Publishes keys: `merge(current or null)` gives the text to write (and is also what the caller
 * keeps locally); written only if the object is still the one read, else read and merged again.
 * Returns the text written.
 */
export async function publishKeys(a: ArchiveConfig, merge: (current: string | null) => Promise<string>): Promise<string> {
  const s3 = archiveClient(a);
  try {
    for (let attempt = 1; ; attempt++) {
      const cur = await readKeysObject(s3, a);
      const have = cur === 'unchanged' ? null : cur;
      const body = await merge(have?.body ?? null);
      try {
        await s3.send(
          new PutObjectCommand({
            Bucket: a.bucket,
            Key: keysObjectKey(a),
            Body: body,
            ContentType: 'application/json',
            ...(have ? { IfMatch: have.etag } : { IfNoneMatch: '*' }),
          }),
        );
        return body;
      } catch (e) {
        // 412: another host wrote it since we read it; 409: a concurrent conditional write.
        if ((status(e) === 412 || status(e) === 409) && attempt < 20) continue;
        throw e;
      }
    }
  } catch (e) {
    throw explain(e, a);
  } finally {
    s3.destroy();
  }
}

/**
 * A reader's copy of the keys object: polled every `everyMs` with If-None-Match, written to
 * `localPath` (atomically) whenever it changes. Returns the stop function; a failed poll is reported
 * and the last copy kept (keys are never dropped because the bucket is unreachable).
 */
export function followKeys(a: ArchiveConfig, localPath: string, everyMs: number, warn: (msg: string) => void): () => void {
  const s3 = archiveClient(a, { maxAttempts: 2 });
  let etag: string | undefined;
  let stopped = false;
  let timer: NodeJS.Timeout | null = null;
  const tick = async (): Promise<void> => {
    try {
      const r = await readKeysObject(s3, a, etag);
      if (r && r !== 'unchanged') {
        await mkdir(dirname(localPath), { recursive: true });
        await writeFileDurable(localPath, r.body, { mode: 0o600 });
        etag = r.etag;
      }
    } catch (e) {
      warn(`archive ${a.url}: keys not refreshed: ${(e as Error).message}`);
    }
    if (!stopped) (timer = setTimeout(() => void tick(), everyMs)).unref();
  };
  void tick();
  return () => {
    stopped = true;
    if (timer) clearTimeout(timer);
    s3.destroy();
  };
}
