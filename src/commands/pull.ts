// `pmtape pull <url>`: mirrors a pmtape server's Parquet datasets, or the archive in a bucket
// (`s3://<bucket>/<prefix>`, no server needed), into a local tree (src/pull/).
// Progress on stderr (a bar on a TTY), one JSON summary line last on stdout; exit 0 only when every
// listed file is in place and verified, 1 when any failed or the listing could not be had, 2 on usage.

import { resolve } from 'node:path';
import type { Command } from 'commander';
import { clientKey, parseArchiveUrl, type ArchiveConfig } from '../config.js';
import { dayStartMs } from '../schema/time.js';
import { pull, type PullSummary } from '../pull/mirror.js';
import { DEFAULT_MAX_LISTING_BYTES, DEFAULT_MAX_LISTING_PAGES } from '../pull/client.js';
import type { PullSource } from '../pull/source.js';
import { progress, type Progress } from './common.js';

interface PullFlags {
  key?: string;
  out: string;
  family?: string;
  dataset?: string;
  startDate?: string;
  endDate?: string;
  concurrency: string;
  retries: string;
  idleTimeout: string;
  maxListingBytes: string;
  maxListingPages: string;
  rehash?: boolean;
  endpoint?: string;
  region: string;
}

function usage(msg: string): void {
  process.stderr.write(`pmtape pull: ${msg}\n`);
  process.exitCode = 2;
}

function intFlag(text: string, name: string, min: number, max: number): number | null {
  const n = Number(text);
  if (!/^\d+$/.test(text) || n < min || n > max) {
    usage(`${name} must be an integer from ${min} to ${max}, got "${text}"`);
    return null;
  }
  return n;
}

export function register(program: Command): void {
  program
    .command('pull')
    .description("mirror a server's Parquet datasets into DIR/<path>: parallel, resumable, sha256-verified, unchanged files skipped")
    .argument('<url>', "the server (http://127.0.0.1:8080) or the archive's bucket (s3://<bucket>/<prefix>)")
    .option('--key <key>', 'API key (env PMTAPE_KEY); wallet-prediction datasets need a paid key')
    .option('--out <dir>', 'local folder the tree is mirrored into', './parquet')
    .option('--family <family>', 'only this family (coin, wallet-prediction, yesno-exchange)')
    .option('--dataset <dataset>', 'only this dataset')
    .option('--start-date <day>', 'only partitions on or after this UTC day (YYYY-MM-DD)')
    .option('--end-date <day>', 'only partitions on or before this UTC day (YYYY-MM-DD)')
    .option('--concurrency <n>', 'downloads in flight at once', '4')
    .option('--retries <n>', 'retries of a network error, 5xx or cut transfer per file, with backoff', '5')
    .option('--idle-timeout <seconds>', 'a listing page or transfer with no byte for this long is retried', '60')
    .option(
      '--max-listing-bytes <n>',
      'bytes the whole listing may take before pull gives up on the server',
      String(DEFAULT_MAX_LISTING_BYTES),
    )
    .option('--max-listing-pages <n>', 'listing pages followed before pull gives up on the server', String(DEFAULT_MAX_LISTING_PAGES))
    .option('--rehash', 'hash every local file again instead of trusting the sidecar cache')
    .option('--endpoint <url>', 's3:// only: the S3-compatible endpoint (R2, MinIO, SeaweedFS); omit for AWS')
    .option('--region <region>', 's3:// only: the signing region', 'us-east-1')
    .action(async (url: string, opts: PullFlags) => {
      let archive: ArchiveConfig | null = null;
      if (url.startsWith('s3://')) {
        try {
          archive = archiveTarget(url, opts.endpoint, opts.region);
        } catch (e) {
          return usage((e as Error).message);
        }
      } else if (!/^https?:\/\/[^/]/.test(url))
        return usage(`<url> must be an http:// or https:// URL or s3://<bucket>/<prefix>, got "${url}"`);
      else if (opts.endpoint !== undefined) return usage('--endpoint is for s3:// URLs (a bucket); a server is reached at <url> itself');
      const concurrency = intFlag(opts.concurrency, '--concurrency', 1, 64);
      const retries = intFlag(opts.retries, '--retries', 0, 100);
      if (concurrency === null || retries === null) return;
      const idleS = Number(opts.idleTimeout);
      if (!/^\d+(\.\d+)?$/.test(opts.idleTimeout) || idleS < 0.01 || idleS > 3600)
        return usage(`--idle-timeout must be seconds from 0.01 to 3600, got "${opts.idleTimeout}"`);
      const maxListingBytes = intFlag(opts.maxListingBytes, '--max-listing-bytes', 1024, Number.MAX_SAFE_INTEGER);
      if (maxListingBytes === null) return;
      const maxListingPages = intFlag(opts.maxListingPages, '--max-listing-pages', 1, 10_000_000);
      if (maxListingPages === null) return;
      for (const [flag, day] of [
        ['--start-date', opts.startDate],
        ['--end-date', opts.endDate],
      ] as const) {
        if (day !== undefined && dayStartMs(day) === null) return usage(`${flag} must be a UTC day like 2026-07-26, got "${day}"`);
      }
      const outDir = resolve(opts.out);

      // First signal: stop, keep staged downloads for the next run, print the summary. Second: exit.
      const stop = new AbortController();
      const onSignal = (): void => {
        if (stop.signal.aborted) process.exit(1);
        stop.abort(new Error('interrupted'));
      };
      process.on('SIGINT', onSignal);
      process.on('SIGTERM', onSignal);

      let bar: Progress | null = null;
      let summary: PullSummary = { files: 0, downloaded: 0, skipped: 0, bytes: 0, failed: 0 };
      let ok = true;
      let source: PullSource | undefined;
      try {
        if (archive) {
          const s3 = await (await import('../pull/s3.js')).s3Source(archive);
          if (s3.anonymous) process.stderr.write(`pull: no AWS credentials found: reading ${url} anonymously (a public bucket)\n`);
          source = s3;
        }
        summary = await pull({
          source,
          baseUrl: url.replace(/\/+$/, '').replace(/\/v3$/, ''),
          key: clientKey(opts.key),
          outDir,
          filters: { family: opts.family, dataset: opts.dataset, startDate: opts.startDate, endDate: opts.endDate },
          concurrency,
          retries,
          rateLimitRetries: 10,
          idleTimeoutMs: Math.round(idleS * 1000),
          maxListingBytes,
          maxListingPages,
          rehash: opts.rehash === true,
          signal: stop.signal,
          onListed: (files, bytes) => {
            process.stderr.write(`pull: ${files} file(s), ${(bytes / 1e6).toFixed(1)} MB listed by ${url}\n`);
            bar = progress('pull', files);
          },
          onFile: (path, outcome) => bar?.tick(1, `${outcome} ${path}`),
          note: (line) => process.stderr.write(`pull: ${line}\n`),
        });
      } catch (e) {
        ok = false;
        process.stderr.write(`pmtape pull: ${stop.signal.aborted ? 'interrupted' : (e as Error).message}\n`);
      }
      source?.close();
      (bar as Progress | null)?.done(
        `${summary.downloaded} downloaded, ${summary.skipped} unchanged, ${summary.failed} failed into ${outDir}`,
      );
      process.stdout.write(JSON.stringify(summary) + '\n');
      process.exitCode = ok && summary.failed === 0 && !stop.signal.aborted ? 0 : 1;
    });
}

/** The bucket named by `s3://<bucket>/<prefix>` and the flags, as the archive tier describes one. */
function archiveTarget(url: string, endpoint: string | undefined, region: string): ArchiveConfig {
  const fail = (field: string, why: string): Error => new Error(`${field} ${why}`);
  const { bucket, prefix } = parseArchiveUrl(url, '<url>', fail);
  if (endpoint !== undefined) {
    let ok = false;
    try {
      ok = /^https?:$/.test(new URL(endpoint).protocol);
    } catch {
      ok = false;
    }
    if (!ok) throw fail('--endpoint', `must be an http(s):// URL like http://127.0.0.1:8333, got "${endpoint.slice(0, 80)}"`);
  }
  if (!/^[a-z0-9-]{1,40}$/.test(region))
    throw fail('--region', `must be a region name like us-east-1 (R2: auto), got "${region.slice(0, 40)}"`);
  return {
    url: `s3://${bucket}${prefix ? `/${prefix}` : ''}`,
    bucket,
    prefix,
    endpoint: endpoint === undefined ? null : endpoint.replace(/\/+$/, ''),
    region,
    pathStyle: endpoint !== undefined,
    maxLagDays: 0,
  };
}
