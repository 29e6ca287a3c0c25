// The `pmtape` command line: thin wrappers over the modules in src/. Each command lives in
// src/commands/<name>.ts and registers itself here; this file only wires them to commander.

// First: keeps nextTick's record shapes alive before loading anything else (see tick-shape.ts).
import './tick-shape.js';
import { Command } from 'commander';
import { registerCommands } from './commands/index.js';

const program = new Command();
program
  .name('pmtape')
  .description('Self-hostable historical data service for prediction markets')
  .showHelpAfterError()
  .exitOverride((err) => {
    // commander exits 0 for --help/--version, 1 for usage errors; keep that, without a stack trace.
    process.exit(err.exitCode);
  });

registerCommands(program);

program.parseAsync(process.argv).catch((err: unknown) => {
  const msg = err instanceof Error ? err.message : String(err);
  process.stderr.write(`pmtape: ${msg}\n`);
  process.exit(1);
});
