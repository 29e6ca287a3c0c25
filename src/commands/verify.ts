// `pmtape verify [--repair]`: checks every log and index under the data dir (and, through the
// checks listed below, other stored data), names each damaged file and offset, exits 1 on damage;
// with --repair truncates torn tails and rebuilds indexes, then exits 0.

import { basename } from 'node:path';
import type { Command } from 'commander';
import { verifyDataDir } from '../storage/index.js';
import type { FileCheck } from '../storage/index.js';
import { commonOptions, configFrom, progress } from './common.js';

/**
 * Further checks run after the logs (e.g. Parquet partitions): each gets the data dir and the
 * repair flag and returns its FileChecks. Other modules add theirs with `addVerifyCheck`.
 */
export type VerifyCheck = (
  dataDir: string,
  repair: boolean,
  onProgress: (label: string, done: number, total: number) => void,
) => Promise<FileCheck[]>;
const extraChecks: VerifyCheck[] = [];
export function addVerifyCheck(check: VerifyCheck): void {
  extraChecks.push(check);
}

/** Runs all checks and prints one line per damaged file; returns the process exit code. */
export async function runVerify(dataDir: string, repair: boolean): Promise<number> {
  let bar: ReturnType<typeof progress> | null = null;
  const checks = await verifyDataDir(dataDir, {
    repair,
    onProgress: (_done, total, file) => {
      bar ??= progress('verify logs', total);
      bar.tick(1, basename(file));
    },
  });
  (bar as ReturnType<typeof progress> | null)?.done();
  for (const check of extraChecks) {
    let extraBar: ReturnType<typeof progress> | null = null;
    checks.push(
      ...(await check(dataDir, repair, (label, _done, total) => {
        extraBar ??= progress(label, total);
        extraBar.tick(1);
      })),
    );
    (extraBar as ReturnType<typeof progress> | null)?.done();
  }
  let damaged = 0;
  let unrepaired = 0;
  for (const c of checks) {
    if (c.ok) continue;
    damaged++;
    if (!c.repaired) unrepaired++;
    const at = c.damageOffset === undefined ? '' : ` at offset ${c.damageOffset}`;
    process.stdout.write(`${c.repaired ? 'repaired' : 'damaged'}: ${c.file}${at}: ${c.problem ?? 'damaged'}\n`);
  }
  const files = checks.length;
  if (damaged === 0) process.stdout.write(`verify: ${files} files checked, no damage\n`);
  else process.stdout.write(`verify: ${files} files checked, ${damaged} damaged, ${damaged - unrepaired} repaired\n`);
  return unrepaired > 0 ? 1 : 0;
}

export function register(program: Command): void {
  commonOptions(
    program
      .command('verify')
      .description('check every log, index and partition; exit 1 on damage; --repair truncates torn tails and rebuilds indexes')
      .option('--repair', 'truncate torn tails and rebuild indexes, then exit 0'),
  ).action(async (opts: { repair?: boolean; dataDir?: string; config?: string }) => {
    const cfg = configFrom(opts);
    process.exitCode = await runVerify(cfg.dataDir, opts.repair === true);
  });
}
