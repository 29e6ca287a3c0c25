// What `pmtape archive sync`, `pmtape compact` and `start`'s background compaction share: which
// days to publish and publishing them one after the other with one client.

import type { ArchiveConfig } from '../../config.js';
import { DEFAULT_RETRY, PAYLOAD_PROBE, archiveClient, checksPayloads, type ClientOptions, type RetryOptions } from './client.js';
import { addUploadErrors, objectKey, publishTarget } from './layout.js';
import { compactedDays, unpublishedDays } from './lag.js';
import { beginUploads, fetchDayRecord, planDay, planSize, publishDay, zeroCounts, type PublishHooks, type SyncCounts } from './publish.js';

export interface SyncOptions extends PublishHooks {
  /** 'pending': days not yet published from here (default); 'all': re-check every compacted day. */
  readonly days?: 'pending' | 'all' | readonly string[];
  /** Told how many objects the run will look at, once the days are planned (for a progress bar). */
  readonly onPlanned?: (objects: number, days: number) => void;
  readonly client?: ClientOptions;
  /** Named days must have compacted partitions here (else an error saying to compact first). */
  readonly requireData?: boolean;
}

export interface SyncResult extends SyncCounts {
  /** One line per object that could not be published (the day stays unpublished, rerun resumes). */
  readonly errors: string[];
  /** Days another recorder had published where this one publishes (refused; see publish.ts sharedPrefix). */
  readonly conflicts: string[];
}

export async function syncArchive(dataDir: string, shared: ArchiveConfig, o: SyncOptions = {}): Promise<SyncResult> {
  const a = publishTarget(shared); // a recorder with an id publishes under recorders/<id>/
  const days =
    o.days === undefined || o.days === 'pending'
      ? await unpublishedDays(dataDir, a)
      : o.days === 'all'
        ? await compactedDays(dataDir)
        : o.days;
  const total: SyncResult = { ...zeroCounts(), errors: [], conflicts: [] };
  if (days.length === 0) return total;
  // Every failed request attempt counts (pmtape_archive_upload_errors_total), retried or not,
  // and so does a verification that failed after an upload the server accepted.
  let errors = 0;
  const s3 = archiveClient(a, { ...o.client, onAttemptError: () => void errors++ });
  const base = o.retry ?? DEFAULT_RETRY;
  const retry: RetryOptions = {
    ...base,
    onRetry: (what, err, n) => {
      if (!(err as { $metadata?: unknown }).$metadata) errors++; // not already counted as a request's
      base.onRetry?.(what, err, n);
    },
  };
  try {
    // The first day's record (a recorder reads it before publishing the day) is asked for while the
    // days are planned; each later day's is read just before it is published, so that read is fresh.
    const first = fetchDayRecord(s3, a, days[0], retry);
    first.catch(() => undefined); // a day that turns out to have nothing to publish: nobody awaits it
    // Whether the store checks payload hashes (client.ts) is asked beside it: publishDay's uploads wait for the answer.
    void checksPayloads(s3, a.bucket, objectKey(a, PAYLOAD_PROBE));
    // And its local note that uploads begin (publish.ts beginUploads), off the path as well.
    const begun = beginUploads(dataDir, a.url, days[0]);
    begun.catch(() => undefined); // awaited by publishDay when the day has something to publish
    const plans = [];
    for (const day of days) {
      const plan = await planDay(dataDir, a, day);
      if (plan.partitions.length === 0) {
        if (o.requireData)
          throw new Error(`${day} has no compacted partition in this data dir: run \`pmtape compact --date ${day}\` first`);
        continue;
      }
      plans.push(plan);
    }
    o.onPhase?.('planned');
    o.onPlanned?.(
      plans.reduce((n, p) => n + planSize(p), 0),
      plans.length,
    );
    for (const plan of plans) {
      const r = await publishDay(s3, a, dataDir, plan, {
        ...o,
        retry,
        dayRecord: plan.day === days[0] ? first : undefined,
        begun: plan.day === days[0] ? begun : undefined,
      });
      for (const k of ['days', 'files', 'uploaded', 'skipped', 'bytes', 'failed'] as const) total[k] += r[k];
      total.errors.push(...r.errors);
      total.conflicts.push(...r.conflicts);
    }
  } finally {
    s3.destroy();
    await addUploadErrors(dataDir, errors).catch(() => undefined);
    o.onPhase?.('closed');
  }
  return total;
}
