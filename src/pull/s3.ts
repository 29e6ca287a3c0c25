// The bucket as a pull source (`pmtape pull s3://<bucket>/<prefix>`): the archive's day records and
// manifests are the listing, its objects the files. No pmtape server is involved. Resuming reads
// the rest of an object only while its ETag is unchanged (If-Match), else the whole object again.

import { FatalError, TransientError, networkMessage } from './client.js';
import type { PullSource } from './source.js';
import type { ArchiveConfig } from '../config.js';
import { openArchiveReader, type ArchiveReader } from '../storage/index.js';

/** Errors the reader marks fatal (no such object, credentials refused) are not retried. */
function classify(e: unknown): Error {
  if (e instanceof FatalError || e instanceof TransientError) return e;
  const err = e as Error & { fatal?: boolean };
  if (err.fatal) return new FatalError(err.message);
  return new TransientError(err.message ? err.message : networkMessage(e));
}

export async function s3Source(archive: ArchiveConfig): Promise<PullSource & { readonly anonymous: boolean }> {
  const reader: ArchiveReader = await openArchiveReader(archive);
  return {
    name: archive.url,
    anonymous: reader.anonymous,
    async list(filters, onRetry) {
      try {
        return await reader.list(filters, {
          attempts: 6,
          baseMs: 500,
          maxMs: 8000,
          onRetry: (what, err) => onRetry(`${what}: ${err.message}`, 0),
        });
      } catch (e) {
        throw new FatalError((e as Error).message);
      }
    },
    async open(path, from, etag, signal) {
      try {
        return { ...(await reader.get(path, from, etag, signal)), discard: async () => undefined };
      } catch (e) {
        if ((e as { changed?: boolean }).changed) {
          try {
            return { ...(await reader.get(path, 0, null, signal)), discard: async () => undefined };
          } catch (e2) {
            throw classify(e2);
          }
        }
        throw classify(e);
      }
    },
    close: () => reader.close(),
  };
}
