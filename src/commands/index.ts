// The list of CLI commands. Each module exports `register(program)`; add one import and one entry.

import type { Command } from 'commander';
import { register as verify } from './verify.js';
import { register as demo } from './demo.js';
import { register as record } from './record.js';
import { register as sim } from './sim.js';
import { register as importCmd } from './import.js';
import { register as serve } from './serve.js';
import { register as keys } from './keys.js';
import { register as start } from './start.js';
import { register as compact } from './compact.js';
import { register as backfill } from './backfill.js';
import { register as pull } from './pull.js';
import { register as archive } from './archive.js';
import { register as exportCmd } from './export.js';

const commands: Array<(program: Command) => void> = [
  verify,
  demo,
  record,
  sim,
  importCmd,
  serve,
  keys,
  start,
  compact,
  backfill,
  pull,
  archive,
  exportCmd,
];

export function registerCommands(program: Command): void {
  for (const register of commands) register(program);
}
