// First-start key: a fresh install has no API keys, so nobody could query it. On the first `start`
// with an empty key file one paid key is created and printed once, with how to make more; later
// starts print nothing (the secret is never stored, only its hash). `demo` uses `demoKey` instead.

import { createKey, listKeys, revokeKey } from './keys.js';

/** The command that makes more keys, as the README prints it. */
export const MORE_KEYS_HINT = 'node dist/cli.js keys create --plan free|paid --name NAME   (list: keys list, revoke: keys revoke ID)';

export interface FirstKey {
  readonly id: string;
  readonly key: string;
}

/**
 * Creates one paid key named "first" when the data dir has no key at all (revoked ones count as
 * keys: an operator who revoked everything meant it). Returns it, or null when keys exist.
 * Two processes starting at once may both see an empty file; the key file's own lock keeps both
 * writes intact, and a second key then is harmless (each was printed by the process that made it).
 */
export async function ensureFirstKey(dataDir: string): Promise<FirstKey | null> {
  if ((await listKeys(dataDir)).length > 0) return null;
  const { record, key } = await createKey(dataDir, 'paid', 'first');
  return { id: record.id, key };
}

/** The lines printed for a new key: the key alone on a `key ` line (easy to copy or grep), then a note. */
export function keyLines(k: FirstKey, why: string): string {
  return (
    `key ${k.key}\n` +
    `  ^ ${why} (id ${k.id}, plan paid). It is shown only this once; keep it.\n` +
    `  Use it as "Authorization: Bearer <key>". More keys: ${MORE_KEYS_HINT}\n`
  );
}

/** For `start`: create-and-print the first key if needed. Writes to `out` (stdout by default). */
export async function announceFirstKey(dataDir: string, out: NodeJS.WritableStream = process.stdout): Promise<FirstKey | null> {
  const k = await ensureFirstKey(dataDir);
  if (k) out.write(keyLines(k, 'first start: no API keys existed, so one was created'));
  return k;
}

/**
 * For `demo`: every run prints a usable key. Earlier demo keys are revoked (their secrets were
 * never stored, so they could not be shown again) and a fresh paid key named "demo" is created.
 */
export async function demoKey(dataDir: string): Promise<FirstKey> {
  for (const rec of await listKeys(dataDir)) {
    if (rec.name === 'demo' && rec.revoked_ts === null) await revokeKey(dataDir, rec.id);
  }
  const { record, key } = await createKey(dataDir, 'paid', 'demo');
  return { id: record.id, key };
}
