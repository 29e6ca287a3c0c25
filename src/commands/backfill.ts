// `pmtape backfill catalog --family F [--since DATE]`: imports market catalogue history (metadata,
// resolution, volume) from the family's upstream REST into the catalog logs (src/recorders/backfill.ts).
// Never books. Prints one JSON summary line on stdout; progress and skipped markets on stderr.

import type { Command } from 'commander';
import { commonOptions, configFrom, progress, type Progress } from './common.js';
import { FAMILIES, type Family } from '../schema/observation.js';

const DAY_MS = 86_400_000;

/** `--family`: one of the families with a catalogue upstream. */
export function parseFamily(v: string | undefined): Family {
  if (v !== undefined && (FAMILIES as readonly string[]).includes(v)) return v as Family;
  throw new Error(`--family must be one of ${FAMILIES.join(', ')}, got ${v === undefined ? 'nothing' : `"${v}"`}`);
}

/** `--since YYYY-MM-DD` (UTC midnight, not in the future); default: 7 days ago. */
export function parseSince(v: string | undefined, now = Date.now()): number {
  if (v === undefined) return now - 7 * DAY_MS;
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(v);
  const ms = m ? Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3])) : NaN;
  // Date.UTC rolls 2026-02-31 over to March: a valid date must print back as itself.
  if (!m || !Number.isFinite(ms) || new Date(ms).toISOString().slice(0, 10) !== v) {
    throw new Error(`--since must be a date YYYY-MM-DD (UTC), got "${v}"`);
  }
  if (ms > now) throw new Error(`--since ${v} is in the future`);
  return ms;
}

export function register(program: Command): void {
  const backfill = program.command('backfill').description('import history from upstream REST (catalogue only; never books)');
  commonOptions(backfill.command('catalog'))
    .description('import market catalogue history (metadata, resolution, volume) from upstream REST; never books')
    .option('--family <family>', `market family: ${FAMILIES.join(', ')}`)
    .option('--since <date>', 'markets that ended on or after this UTC date, YYYY-MM-DD (default: 7 days ago)')
    .action(async (opts: { dataDir?: string; config?: string; family?: string; since?: string }) => {
      const family = parseFamily(opts.family);
      const since = parseSince(opts.since);
      const config = configFrom(opts);
      const { runBackfill } = await import('../recorders/backfill.js');
      const label = `backfill ${family}`;
      let bar: Progress | null = null;
      let phase = '';
      const sum = await runBackfill(config, {
        family,
        since,
        log: (line) => process.stderr.write(`pmtape backfill: ${line}\n`),
        onProgress: (p, done, total) => {
          if (p !== phase) {
            bar?.done();
            bar = progress(`${label} ${p === 'list' ? 'listing' : 'writing'}`, total);
            phase = p;
          }
          bar!.tick(1);
        },
      });
      (bar as Progress | null)?.done(`${sum.written} written, ${sum.unchanged} unchanged, ${sum.skipped_locked} skipped (locked)`);
      process.stdout.write(`${JSON.stringify(sum)}\n`);
      if (sum.error !== null) throw new Error(`backfill failed: ${sum.error}`);
    });
}
