// Deletes daily log files once they are safely in Parquet: only when their partition's file still
// matches its manifest (sha256 re-checked), the log is byte-for-byte what was compacted, and the
// day is older than the retention period, and (with an archive configured) the day is published
// and verified in the bucket. Anything doubtful keeps the log.

import { createHash } from 'node:crypto';
import { readFile, stat, unlink } from 'node:fs/promises';
import { journalDay } from '../log/day-journal.js';
import { join } from 'node:path';
import { DAY_MS, dayStartMs } from '../../schema/time.js';
import { listPartitions, partitionDir, partitionRel, readManifest } from '../parquet/manifest.js';
import { isPublished } from '../archive/layout.js';
import { indexFilePath, logFilePath } from '../paths.js';
import { datasetsOfStream, streamOfDataset } from '../parquet/datasets.js';

export interface RetentionResult {
  readonly deleted: string[];
  /** Logs kept although old enough, with the reason. */
  readonly kept: { readonly file: string; readonly why: string }[];
}

/** True when the partition's data file matches its manifest (checksum of the bytes on disk). */
export async function partitionMatches(dir: string): Promise<boolean> {
  const m = await readManifest(dir);
  if (!m) return false;
  for (const f of m.files) {
    let bytes: Buffer;
    try {
      bytes = await readFile(join(dir, f.file));
    } catch {
      return false;
    }
    if (bytes.length !== f.bytes || createHash('sha256').update(bytes).digest('hex') !== f.sha256) return false;
  }
  return true;
}

/**
 * `archiveUrl`: the configured archive, or null. With one, a log goes only once its day is
 * recorded as published there with the partitions' current manifests (archive/layout.ts), so the
 * local copy outlives any failed or pending upload.
 */
export async function deleteExpiredLogs(
  dataDir: string,
  now: number,
  retentionDays: number,
  archiveUrl: string | null = null,
): Promise<RetentionResult> {
  const out: RetentionResult = { deleted: [], kept: [] };
  for (const p of await listPartitions(dataDir)) {
    // A stream's primary partition decides (v1: `books`); every v2 dataset of the stream must match.
    const stream = streamOfDataset(p.dataset);
    const family = datasetsOfStream(stream);
    if (p.dataset !== stream && p.dataset !== family[0]) continue;
    if (p.dataset === 'books' && (await readManifest(partitionDir(dataDir, p.family, family[0], p.date)))) continue; // migrated: v2 decides
    if (dayStartMs(p.date)! + DAY_MS + retentionDays * DAY_MS > now) continue;
    const m = await readManifest(p.dir);
    if (!m) continue;
    const present: { market: string; log: string }[] = [];
    for (const market of Object.keys(m.sources)) {
      const log = logFilePath(dataDir, { family: p.family, stream, market }, p.date);
      const size = await stat(log).then(
        (s) => s.size,
        () => null,
      );
      if (size === null) continue;
      if (size !== m.sources[market].bytes) out.kept.push({ file: log, why: 'log differs from what was compacted (run compact again)' });
      else present.push({ market, log });
    }
    if (present.length === 0) continue;
    const siblings = p.dataset === 'books' ? [p.dir] : family.map((d) => partitionDir(dataDir, p.family, d, p.date));
    const bad = [];
    for (const dir of siblings) if (!(await partitionMatches(dir))) bad.push(dir);
    if (bad.length) {
      for (const x of present) out.kept.push({ file: x.log, why: `partition ${bad[0]} does not match its manifest` });
      continue;
    }
    if (archiveUrl !== null) {
      const rels = new Map(
        (p.dataset === 'books' ? [p.dataset] : family).map((d) => [
          partitionRel(p.family, d, p.date),
          partitionDir(dataDir, p.family, d, p.date),
        ]),
      );
      if (!(await isPublished(dataDir, archiveUrl, p.date, rels))) {
        for (const x of present)
          out.kept.push({
            file: x.log,
            why: `${p.date} is not yet published and verified in the archive ${archiveUrl} (run pmtape archive sync)`,
          });
        continue;
      }
    }
    // A market with records set aside keeps its log: the API serves a day from its log while that
    // exists, so it goes on answering with every record (the partition lacks the set-aside ones).
    const aside = new Map<string, string>();
    if (p.dataset !== 'books') {
      for (const dir of siblings) {
        const q = (await readManifest(dir))?.quarantine;
        if (q?.file)
          for (const [market, n] of Object.entries(q.markets)) aside.set(market, `${n} record(s) set aside in ${join(dir, q.file)}`);
      }
    }
    for (const x of present) {
      if (aside.has(x.market)) {
        out.kept.push({
          file: x.log,
          why: `${aside.get(x.market)!}: the log keeps serving them (delete it by hand once they are not needed)`,
        });
        continue;
      }
      // Journaled first (a census of the logs learns it is gone), then the log: from that instant
      // readers serve the day from Parquet; the index is derived data.
      await journalDay(dataDir, { family: p.family, stream, market: x.market }, p.date);
      await unlink(x.log);
      await unlink(indexFilePath(dataDir, { family: p.family, stream, market: x.market }, p.date)).catch(() => undefined);
      out.deleted.push(x.log);
    }
  }
  return out;
}
