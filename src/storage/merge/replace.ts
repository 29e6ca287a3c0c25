// Replacing a merged day atomically for readers (`archive merge --replace`). The new day is
// published under new object names (publish.ts planDay's generation: its data files, then its
// manifests, then the day record, which names each manifest), so until its day record is written a
// reader finds the old record, the old manifests and the old files, all untouched; from then on it
// finds the new ones. Only after the new record is written are the objects no record names any
// more deleted: the old day's, and those of a replacement killed before its record.

import { randomBytes } from 'node:crypto';
import { DeleteObjectCommand } from '@aws-sdk/client-s3';
import type { ArchiveConfig } from '../../config.js';
import { listAll, withRetries, type RetryOptions, type S3Client } from '../archive/client.js';
import type { DayPlan } from '../archive/publish.js';

/** A fresh generation name: time first (so a listing sorts them), then randomness (two runs at once differ). */
export const newGeneration = (): string => `${Date.now().toString(36)}${randomBytes(3).toString('hex')}`;

/**
 * Deletes every object in the folders of `plan`'s partitions that `plan` does not publish (the day
 * it replaced, and leftovers of killed replacements). Run only after `plan`'s day record is written.
 * Returns how many were deleted.
 */
export async function deleteReplaced(
  s3: S3Client,
  a: ArchiveConfig,
  plan: DayPlan,
  retry: RetryOptions,
  onDelete?: (key: string) => void,
): Promise<number> {
  const keep = new Set(plan.partitions.flatMap((p) => [p.manifest.key, ...p.files.map((f) => f.key)]));
  let n = 0;
  for (const p of plan.partitions) {
    const prefix = p.manifest.key.slice(0, p.manifest.key.lastIndexOf('/') + 1);
    const { objects } = await listAll(s3, a.bucket, prefix, { retry });
    const stale = objects.map((o) => o.key).filter((k) => !keep.has(k) && !k.slice(prefix.length).includes('/'));
    for (const key of stale) {
      onDelete?.(key);
      await withRetries(`DELETE ${key}`, () => s3.send(new DeleteObjectCommand({ Bucket: a.bucket, Key: key })), retry);
      n++;
    }
  }
  return n;
}
