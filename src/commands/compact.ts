// `pmtape compact [--date YYYY-MM-DD] [--all] [--dry-run]`: turns closed daily logs into Parquet
// partitions (progress bar on a TTY), publishes them to the archive when one is configured, then
// deletes logs past the retention period whose partition verifies (and, with an archive, whose day
// is published there). Also registers the partition-vs-manifest check of `pmtape verify`.

import type { Command } from 'commander';
import { DISK_ERROR_CODES } from '../errors.js';
import { dayStartMs, utcDay, DAY_MS } from '../schema/time.js';
import {
  checkPartitions,
  closedLogDays,
  compactDay,
  deleteExpiredLogs,
  publishTarget,
  syncArchive,
  type PartitionResult,
} from '../storage/index.js';
import { addVerifyCheck } from './verify.js';
import { commonOptions, configFrom, progress } from './common.js';

addVerifyCheck((dataDir, repair, onProgress) => checkPartitions(dataDir, repair, onProgress));

const line = (r: PartitionResult): string =>
  `${r.status} family=${r.family}/dataset=${r.dataset}/date=${r.date} rows=${r.rows} bytes=${r.bytes}${r.quarantined ? ` quarantined=${r.quarantined}` : ''}\n`;

export function register(program: Command): void {
  commonOptions(
    program
      .command('compact')
      .description('turn closed daily logs into Parquet partitions (default: yesterday; --all: every closed day)')
      .option('--date <day>', 'compact this UTC day (YYYY-MM-DD); it must be before today')
      .option('--all', 'compact every closed day that has logs')
      .option('--dry-run', 'show what would be written; change nothing'),
  ).action(async (opts: { date?: string; all?: boolean; dryRun?: boolean; dataDir?: string; config?: string }) => {
    const cfg = configFrom(opts);
    const now = Date.now();
    let days: string[];
    if (opts.date !== undefined) {
      if (dayStartMs(opts.date) === null) {
        process.stderr.write(`pmtape compact: --date must be a UTC day like 2026-07-26, got "${opts.date}"\n`);
        process.exitCode = 2;
        return;
      }
      if (dayStartMs(opts.date)! + DAY_MS > now) {
        process.stderr.write(`pmtape compact: ${opts.date} is not closed yet: only UTC days before ${utcDay(now)} are compacted\n`);
        process.exitCode = 2;
        return;
      }
      days = [opts.date];
    } else if (opts.all) days = await closedLogDays(cfg.dataDir, now);
    else days = [utcDay(now - DAY_MS)];
    const bar = progress(opts.dryRun ? 'compact (dry run)' : 'compact', days.length);
    const results: PartitionResult[] = [];
    for (const day of days) {
      try {
        results.push(
          ...(await compactDay(cfg.dataDir, day, { dryRun: opts.dryRun === true, threads: cfg.storage.compactionThreads ?? undefined })),
        );
      } catch (e) {
        bar.done();
        // A full disk is the operator's to fix, and nothing is lost meanwhile: say so.
        const full =
          DISK_ERROR_CODES.has((e as NodeJS.ErrnoException).code ?? '') || /\b(ENOSPC|EDQUOT)\b|no space left/i.test((e as Error).message);
        const hint = full ? ' (the disk is full: nothing was published, no log was deleted; free space and run compact again)' : '';
        process.stderr.write(`pmtape compact: ${day}: ${(e as Error).message}${hint}\n`);
        process.exitCode = 1;
        return;
      }
      bar.tick(1, day);
    }
    const written = results.filter((r) => r.status === 'written' || r.status === 'would-write');
    const failed = results.filter((r) => r.status === 'failed');
    bar.done(
      `${days.length} day(s), ${written.length} partition(s) ${opts.dryRun ? 'would be written' : 'written'}, ${results.length - written.length - failed.length} unchanged or empty${failed.length ? `, ${failed.length} failed` : ''}`,
    );
    for (const r of results) process.stdout.write(line(r));
    for (const r of failed)
      process.stderr.write(
        `pmtape compact: ${r.date}: family=${r.family}/dataset=${r.dataset} failed (its logs are kept; the rest of the day was compacted): ${r.error}\n`,
      );
    if (failed.length) process.exitCode = 1;
    const aside = results.filter((r) => r.quarantined && r.status !== 'unchanged' && r.dataset !== 'book_snapshots');
    for (const r of aside) {
      process.stderr.write(
        `pmtape compact: ${r.date}: family=${r.family}/dataset=${r.dataset}: ${r.quarantined} record(s) its columns cannot hold exactly were set aside in the partition's _quarantine.jsonl (see docs/datasets.md)\n`,
      );
    }
    if (results.some((r) => r.status === 'blocked')) {
      process.stderr.write(
        'pmtape compact: "blocked" partitions were kept as they are: their logs changed after some were already deleted by retention\n',
      );
    }
    const archive = cfg.storage.archive;
    if (!opts.dryRun && archive) {
      // Publish every compacted day not yet in the archive (today's and any an earlier run left).
      try {
        const r = await syncArchive(cfg.dataDir, archive, { days: 'pending' });
        for (const e of r.errors) process.stderr.write(`archive: failed ${e}\n`);
        for (const c of r.conflicts) process.stderr.write(`archive: warning: ${c}\n`);
        process.stdout.write(
          `archive ${JSON.stringify({ days: r.days, files: r.files, uploaded: r.uploaded, skipped: r.skipped, bytes: r.bytes, failed: r.failed })}\n`,
        );
        if (r.failed) process.exitCode = 1;
      } catch (e) {
        process.stderr.write(`pmtape compact: ${(e as Error).message} (the local copies are kept; run pmtape archive sync once fixed)\n`);
        process.exitCode = 1;
      }
    }
    if (!opts.dryRun) {
      const ret = await deleteExpiredLogs(cfg.dataDir, now, cfg.storage.retentionDays, archive ? publishTarget(archive).url : null);
      for (const f of ret.deleted) process.stdout.write(`deleted ${f}\n`);
      for (const k of ret.kept) process.stderr.write(`kept ${k.file}: ${k.why}\n`);
    }
  });
}
