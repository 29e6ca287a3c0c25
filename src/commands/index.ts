// The list of CLI commands. Each module exports `register(program)`; add one import and one entry.

import type { Command } from 'commander';

const commands: Array<(program: Command) => void> = [
];

export function registerCommands(program: Command): void {
  for (const register of commands) register(program);
}
