// `pmtape archive sync [--date D | --all]` publishes compacted days to the object-storage archive;
// `pmtape archive verify [--date D]` reads the archive back against its manifests. Both show a
// progress bar on a TTY (plain lines otherwise) and end stdout with one JSON summary line.

import type { Command } from 'commander';
import { RECORDER_ID, type ArchiveConfig } from '../config.js';
import { dayStartMs } from '../schema/time.js';
import { mergeArchiveDay, publishTarget, syncArchive, verifyArchive } from '../storage/index.js';
import { commonOptions, configFrom, progress, type Progress } from './common.js';

interface Opts {
  date?: string;
  recorders?: string;
  replace?: boolean;
  workDir?: string;
  all?: boolean;
  dataDir?: string;
  config?: string;
}

function archiveOf(cmd: string, opts: Opts): { dataDir: string; archive: ArchiveConfig; threads?: number } | null {
  const cfg = configFrom(opts);
  if (!cfg.storage.archive) {
    process.stderr.write(
      `pmtape archive ${cmd}: no archive configured: set storage.archive.url in the config file or PMTAPE_ARCHIVE_URL (s3://bucket/prefix); see docs/archive.md\n`,
    );
    process.exitCode = 2;
    return null;
  }
  if (opts.date !== undefined && dayStartMs(opts.date) === null) {
    process.stderr.write(`pmtape archive ${cmd}: --date must be a UTC day like 2026-07-26, got "${opts.date}"\n`);
    process.exitCode = 2;
    return null;
  }
  return { dataDir: cfg.dataDir, archive: cfg.storage.archive, threads: cfg.storage.compactionThreads ?? undefined };
}

const fail = (cmd: string, e: unknown): void => {
  process.stderr.write(`pmtape archive ${cmd}: ${(e as Error).message}\n`);
  process.exitCode = 1;
};

export function register(program: Command): void {
  const archive = program.command('archive').description('the archive of compacted days in object storage (S3, R2, MinIO, SeaweedFS)');
  commonOptions(
    archive
      .command('sync')
      .description('publish compacted days not yet in the archive (data files first, each verified, manifests last)')
      .option('--date <day>', 'publish this UTC day (YYYY-MM-DD)')
      .option('--all', 'check every compacted day against the archive, not only those not yet published from here'),
  ).action(async (opts: Opts) => {
    const ctx = archiveOf('sync', opts);
    if (!ctx) return;
    let bar: Progress | null = null;
    try {
      const r = await syncArchive(ctx.dataDir, ctx.archive, {
        days: opts.date !== undefined ? [opts.date] : opts.all ? 'all' : 'pending',
        requireData: opts.date !== undefined,
        onPlanned: (objects) => {
          bar = progress('archive sync', objects);
        },
        onObject: (key, outcome) => bar?.tick(1, `${outcome} ${key.split('/').slice(-2).join('/')}`),
      });
      (bar as Progress | null)?.done(`${r.days} day(s), ${r.uploaded} uploaded, ${r.skipped} already there, ${r.failed} failed`);
      for (const e of r.errors) process.stderr.write(`failed ${e}\n`);
      for (const c of r.conflicts) process.stderr.write(`warning: ${c}\n`);
      const summary = { days: r.days, files: r.files, uploaded: r.uploaded, skipped: r.skipped, bytes: r.bytes, failed: r.failed };
      // `shared_prefix`: days refused because another recorder published them into this prefix (docs/redundancy.md).
      process.stdout.write(JSON.stringify(r.conflicts.length ? { ...summary, shared_prefix: r.conflicts.length } : summary) + '\n');
      if (r.failed) process.exitCode = 1;
    } catch (e) {
      (bar as Progress | null)?.done();
      fail('sync', e);
    }
  });
  commonOptions(
    archive
      .command('verify')
      .description('read every archived object back and check its sha256 against its manifest (exit 1 on any mismatch)')
      .option('--date <day>', 'verify only this UTC day (YYYY-MM-DD)'),
  ).action(async (opts: Opts) => {
    const ctx = archiveOf('verify', opts);
    if (!ctx) return;
    let bar: Progress | null = null;
    try {
      // A recorder with an id checks what it published (recorders/<id>/); without one, the canonical days.
      const r = await verifyArchive(publishTarget(ctx.archive), opts.date !== undefined ? [opts.date] : null, {
        onPlanned: (objects) => {
          bar = progress('archive verify', objects);
        },
        onObject: (key, ok) => bar?.tick(1, `${ok ? 'ok' : 'MISMATCH'} ${key.split('/').slice(-2).join('/')}`),
      });
      (bar as Progress | null)?.done(`${r.days} day(s), ${r.ok} object(s) ok, ${r.failed} failed`);
      for (const p of r.problems) process.stderr.write(`mismatch ${p}\n`);
      process.stdout.write(JSON.stringify({ days: r.days, files: r.files, ok: r.ok, bytes: r.bytes, failed: r.failed }) + '\n');
      if (r.failed || r.days === 0) process.exitCode = 1;
      if (r.days === 0) process.stderr.write('pmtape archive verify: the archive holds no published day\n');
    } catch (e) {
      (bar as Progress | null)?.done();
      fail('verify', e);
    }
  });
  commonOptions(
    archive
      .command('merge')
      .description('build the canonical day from every recorder that published it under recorders/<id>/ (docs/redundancy.md)')
      .requiredOption('--date <day>', 'the UTC day to merge (YYYY-MM-DD)')
      .option('--recorders <ids>', 'recorder ids to merge, in priority order, comma-separated (default: every one that published the day)')
      .option('--replace', 'merge again a day already in the canonical layout')
      .option('--work-dir <dir>', "where the scratch copy of the recorders' days is made (default: the temp dir)"),
  ).action(async (opts: Opts) => {
    const ctx = archiveOf('merge', opts);
    if (!ctx) return;
    const ids = opts.recorders
      ?.split(',')
      .map((x) => x.trim())
      .filter(Boolean);
    const bad = ids?.find((x) => !RECORDER_ID.test(x));
    if (bad !== undefined) {
      process.stderr.write(
        `pmtape archive merge: --recorders names "${bad.slice(0, 80)}", which is not a recorder id (letters, digits, "_", "-")\n`,
      );
      process.exitCode = 2;
      return;
    }
    // Three steps a run (the recorders' days fetched, merged, compacted), then the publication.
    const bar = progress('archive merge', 3);
    try {
      const r = await mergeArchiveDay(ctx.archive, opts.date!, {
        recorders: ids,
        replace: opts.replace === true,
        workDir: opts.workDir,
        threads: ctx.threads,
        onStep: (msg) => (process.stderr.isTTY ? undefined : process.stderr.write(`${msg}\n`)),
        onPhase: (phase) => (phase === 'object' ? undefined : bar.tick(1, phase)),
      });
      bar.done(r.skipped ?? `${r.markets} market(s) from ${r.recorders.join(', ')}, ${r.gap_ms} ms of merged gaps`);
      for (const e of r.published?.errors ?? []) process.stderr.write(`failed ${e}\n`);
      const p = r.published;
      process.stdout.write(
        JSON.stringify({
          date: r.date,
          recorders: r.recorders,
          markets: r.markets,
          records: r.records,
          gap_ms: r.gap_ms,
          uploaded: p?.uploaded ?? 0,
          skipped: p?.skipped ?? 0,
          failed: p?.failed ?? 0,
          ...(r.skipped ? { already: true } : {}),
        }) + '\n',
      );
      if (p?.failed) process.exitCode = 1;
    } catch (e) {
      bar.done();
      fail('merge', e);
    }
  });
}
