// `pmtape import --kind K FILE…`: raw captured upstream messages through the kind's normalizer into
// the logs (src/recorders/import-run.ts): de-duplicated, provenance kept, nothing fabricated.
// Prints one JSON summary line on stdout; progress on stderr.

import type { Command } from 'commander';
import { commonOptions, configFrom, progress } from './common.js';

export function register(program: Command): void {
  commonOptions(program.command('import'))
    .description('import raw captured upstream messages (JSONL or a JSON array) through the normalizers')
    .requiredOption('--kind <kind>', 'upstream kind: clob, catalog, yesno or wallet')
    .argument('<files...>', 'capture files')
    .action(async (files: string[], opts: { dataDir?: string; config?: string; kind: string }) => {
      const config = configFrom(opts);
      const { runImport } = await import('../recorders/import-run.js');
      const { IMPORTERS } = await import('../families/index.js');
      if (!IMPORTERS[opts.kind]) throw new Error(`--kind must be one of ${Object.keys(IMPORTERS).join(', ')}, got "${opts.kind}"`);
      let bar: ReturnType<typeof progress> | null = null;
      const sum = await runImport(config.dataDir, opts.kind, files, {
        checkpointEveryDeltas: config.storage.checkpointEveryDeltas,
        onProgress: (done, total) => {
          bar ??= progress(`import ${opts.kind}`, total);
          bar.tick(1);
        },
      });
      (bar as ReturnType<typeof progress> | null)?.done(`${sum.written} written, ${sum.duplicates} already present`);
      for (const p of sum.problems.slice(0, 20)) process.stderr.write(`pmtape import: ${p}\n`);
      for (const [why, n] of Object.entries(sum.skipped)) process.stderr.write(`pmtape import: skipped ${n} message(s): ${why}\n`);
      process.stdout.write(`${JSON.stringify(sum)}\n`);
    });
}
