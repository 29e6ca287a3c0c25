// `pmtape import --kind K FILE…`: raw captured upstream messages through the kind's normalizer into
// the logs (src/recorders/import-run.ts): de-duplicated, provenance kept, nothing fabricated.
// Prints one JSON summary line on stdout; progress on stderr. Exits 1 when storage refused records
// or nothing was written (saying why); a re-import that finds everything already there exits 0.

import type { Command } from 'commander';
import { commonOptions, configFrom } from './common.js';
import type { ImportSummary } from '../recorders/import-run.js';

export function register(program: Command): void {
  commonOptions(program.command('import'))
    .description('import raw captured upstream messages (JSONL or a JSON array) through the normalizers')
    .requiredOption('--kind <kind>', 'upstream kind: clob, catalog, yesno or wallet')
    .argument('<files...>', 'capture files')
    .action(async (files: string[], opts: { dataDir?: string; config?: string; kind: string }) => {
      const config = configFrom(opts);
      const { runImport } = await import('../recorders/import-run.js');
      const { IMPORTERS } = await import('../recorders/venues.js');
      if (!IMPORTERS[opts.kind]) throw new Error(`--kind must be one of ${Object.keys(IMPORTERS).join(', ')}, got "${opts.kind}"`);
      let last = Date.now();
      const sum = await runImport(config.dataDir, opts.kind, files, {
        checkpointEveryDeltas: config.storage.checkpointEveryDeltas,
        onProgress: (done) => {
          if (Date.now() - last < 2000) return;
          last = Date.now();
          process.stderr.write(`import ${opts.kind}: ${done} message(s) imported so far\n`);
        },
      });
      process.stderr.write(`import ${opts.kind}: ${sum.written} written, ${sum.duplicates} already present\n`);
      for (const p of sum.problems.slice(0, 20)) process.stderr.write(`pmtape import: ${p}\n`);
      for (const [why, n] of Object.entries(sum.skipped)) process.stderr.write(`pmtape import: skipped ${n} message(s): ${why}\n`);
      process.stdout.write(`${JSON.stringify(sum)}\n`);
      const why = failure(sum);
      if (why) {
        process.stderr.write(`pmtape import: ${why}\n`);
        process.exitCode = 1;
      }
    });
}

/**
 * Why the import failed, or null: storage refused records (they are lost unless imported again),
 * or nothing was written although something was read that was not already there.
 */
export function failure(sum: ImportSummary): string | null {
  if (sum.failed > 0)
    return `storage refused ${sum.failed} record(s) (see the lines above); fix the cause and import the same files again (what is there is skipped)`;
  if (sum.written > 0 || (sum.duplicates > 0 && sum.too_old === 0 && sum.future === 0)) return null;
  const reasons: string[] = [];
  if (sum.messages === 0) reasons.push('no message could be read from the file(s)');
  if (sum.future > 0) reasons.push(`${sum.future} message(s) are timed more than a day ahead`);
  if (sum.too_old > 0) reasons.push(`${sum.too_old} record(s) are older than their logs`);
  const skipped = Object.values(sum.skipped).reduce((a, b) => a + b, 0);
  if (skipped > 0) reasons.push(`${skipped} message(s) were skipped (reasons above)`);
  if (sum.problems.length > 0 && sum.messages === 0) reasons.push('see the problems above');
  return `nothing was written: ${reasons.join('; ') || `none of the ${sum.messages} message(s) mapped to a record`}`;
}
