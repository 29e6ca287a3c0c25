// `pmtape keys create|list|revoke`: API keys in the data dir. `create` prints the key alone on one
// line (the only time it is ever shown; only its hash is stored); `list` never shows secrets.
// A running `serve` notices the change within a moment.

import type { Command } from 'commander';
import { commonOptions, configFrom } from './common.js';
import { createKey, listKeys, mergeKeyFile, printableName, revokeKey } from '../api/plugins/keys.js';
import type { Config } from '../config.js';

/**
 * With an archive configured, the key file is merged with the archive's copy and published back
 * (conditional writes), so stateless readers pick up the change within seconds.
 */
async function share(config: Config): Promise<void> {
  const a = config.storage.archive;
  if (!a) return;
  const { publishKeys } = await import('../storage/index.js');
  await publishKeys(a, (current) => mergeKeyFile(config.dataDir, current));
  process.stderr.write(`keys published to ${a.url}\n`);
}

export function register(program: Command): void {
  const keys = program.command('keys').description('create, list and revoke API keys');

  commonOptions(
    keys
      .command('create')
      .description('create a key; prints the key once, alone on one line')
      .requiredOption('--plan <plan>', 'free (yes/no, coin, coverage) or paid (everything)')
      .requiredOption('--name <name>', 'who or what the key is for'),
  ).action(async (opts: { dataDir?: string; config?: string; plan: string; name: string }) => {
    if (opts.plan !== 'free' && opts.plan !== 'paid') throw new Error(`--plan must be free or paid, got "${opts.plan}"`);
    const config = configFrom(opts);
    const { record, key } = await createKey(config.dataDir, opts.plan, opts.name);
    process.stdout.write(`${key}\n`);
    process.stderr.write(`created key ${record.id} (${record.plan}, "${printableName(record.name)}"); it is not shown again\n`);
    await share(config);
  });

  commonOptions(
    keys.command('list').description('list keys (id, plan, name, created, revoked); never the secret').option('--json', 'one JSON array'),
  ).action(async (opts: { dataDir?: string; config?: string; json?: boolean }) => {
    const list = (await listKeys(configFrom(opts).dataDir)).map((k) => ({
      id: k.id,
      plan: k.plan,
      name: k.name,
      created_time: new Date(k.created_ts).toISOString(),
      revoked_time: k.revoked_ts === null ? null : new Date(k.revoked_ts).toISOString(),
    }));
    if (opts.json) {
      process.stdout.write(JSON.stringify(list) + '\n');
      return;
    }
    for (const k of list) {
      process.stdout.write(
        `${k.id}\t${k.plan}\t${k.revoked_time ? `revoked ${k.revoked_time}` : 'active'}\t${k.created_time}\t${printableName(k.name)}\n`,
      );
    }
  });

  commonOptions(keys.command('revoke').description('revoke a key by id').argument('<id>', 'key id from `keys list`')).action(
    async (id: string, opts: { dataDir?: string; config?: string }) => {
      const config = configFrom(opts);
      if (!(await revokeKey(config.dataDir, id))) throw new Error(`no key with id "${id}" (see \`pmtape keys list\`)`);
      process.stderr.write(`revoked key ${id}\n`);
      await share(config);
    },
  );
}
