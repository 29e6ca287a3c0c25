// Key names are operator input shown on a terminal: `keys create` refuses names with control
// characters (a newline forges a `keys list` line, an escape sequence repaints the terminal), and
// `keys list` escapes any such name already stored, so each key stays one line.

import t from 'tap';
import { readFileSync, writeFileSync } from 'node:fs';
import { createKey, keysPath, listKeys } from '../../src/api/plugins/keys.js';
import { runCliOnce, tempDir } from '../selfhost/helpers.js';

t.setTimeout(240_000);
const SLOW = { timeoutMs: 100_000 };

t.test('keys create refuses a name with a newline, a tab or an ANSI escape, naming --name and the fix', async (t) => {
  const dir = tempDir(t, 'pmtape-keys-');
  for (const bad of ['alice\nabc123\tpaid\tactive', 'x\u001b[2J\u001b[31mred', 'tab\there', 'bidi\u202eevil']) {
    await t.rejects(
      createKey(dir, 'free', bad),
      { message: /--name must not hold control characters.*use plain text/ },
      JSON.stringify(bad),
    );
  }
  const r = await runCliOnce(['keys', 'create', '--plan', 'free', '--name', 'evil\nforged', '--data-dir', dir], SLOW);
  t.equal(r.code, 1, 'the command fails');
  t.match(r.stderr, /--name must not hold control characters/);
  t.equal(r.stdout, '', 'no key printed');
  t.same(await listKeys(dir).catch(() => []), [], 'nothing stored');
  await createKey(dir, 'free', 'Ünïcode name – fine');
  t.equal((await listKeys(dir)).length, 1, 'printable names, Unicode included, still work');
});

t.test('keys list prints a stored name with controls escaped, one line per key', async (t) => {
  const dir = tempDir(t, 'pmtape-keys-');
  await createKey(dir, 'free', 'placeholder');
  await createKey(dir, 'paid', 'bob');
  // A name stored before names were checked (written straight into the file).
  const file = JSON.parse(readFileSync(keysPath(dir), 'utf8')) as { keys: Array<{ name: string }> };
  file.keys[0].name = 'alice\nffffffffffff\tpaid\tactive\u001b[2J';
  writeFileSync(keysPath(dir), JSON.stringify(file));
  const r = await runCliOnce(['keys', 'list', '--data-dir', dir], SLOW);
  t.equal(r.code, 0);
  const lines = r.stdout.trimEnd().split('\n');
  t.equal(lines.length, 2, 'two keys, two lines');
  t.notOk(r.stdout.includes('\u001b'), 'no escape byte reaches the terminal');
  t.match(lines[0], /\talice\\u000affffffffffff\\u0009paid\\u0009active\\u001b\[2J$/, 'the name is shown escaped');
  t.match(lines[1], /\tbob$/);
  const json = await runCliOnce(['keys', 'list', '--json', '--data-dir', dir], SLOW);
  t.equal((JSON.parse(json.stdout) as Array<{ name: string }>)[0].name, file.keys[0].name, '--json keeps the exact name (JSON escapes it)');
});
