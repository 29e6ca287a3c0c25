// The README's five-minute tour, run as printed: `npm run demo` (the same command line), the curl
// requests with the key demo printed, and the `keys` commands — every one must work. The commands
// are read from the README itself (and the same walk-through on docs/self-hosting.md), so a doc
// edit that breaks them fails here.

import t from 'tap';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO, getJson, keyFrom, runCli, runCliOnce, tempDir, waitFor } from './helpers.js';

// Real processes on a machine that may be busy: more than the default per-file budget.
t.setTimeout(300_000);

const readme = readFileSync(join(REPO, 'README.md'), 'utf8');
const section = /<!-- section:selfhost -->([\s\S]*?)<!-- \/section:selfhost -->/.exec(readme)?.[1] ?? '';
/** Indented command lines of a text (its code blocks), comments stripped. */
const commandsOf = (text: string): string[] =>
  text
    .split('\n')
    .filter((l) => /^ {4,}(npm |node |curl |KEY=)/.test(l))
    .map((l) => l.trim().replace(/\s+#.*$/, ''));
const commands = commandsOf(section);
const guideCommands = commandsOf(readFileSync(join(REPO, 'docs', 'self-hosting.md'), 'utf8'));

t.test('the README shows the set-up commands', async (t) => {
  t.match(readme, /npm ci && npm start/, 'npm ci && npm start');
  t.match(readme, /npm ci && npm test/, 'npm ci && npm test');
  t.ok(commands.includes('npm run demo'), 'the walk-through starts with npm run demo');
  t.ok(guideCommands.includes('npm run demo'), 'docs/self-hosting.md shows npm run demo too');
  const pkg = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
  t.equal(pkg.scripts.demo, 'node dist/cli.js demo', 'npm run demo is node dist/cli.js demo');
  t.equal(pkg.scripts.start, 'node dist/cli.js start', 'npm start is node dist/cli.js start');
});

t.test('every command of the self-hosting walk-through works as printed', async (t) => {
  const dataDir = tempDir(t);
  // `npm run demo` with an ephemeral port and a temp data dir instead of 8080 and ./data/demo.
  const demo = runCli(t, ['demo', '--port', '0', '--data-dir', dataDir], { readyTimeoutMs: 60_000 });
  const url = await demo.ready;
  const key = keyFrom(demo.stdout);
  t.ok(key, 'demo prints a key line before ready');

  const readmeCurls = commands.filter((c) => c.startsWith('curl '));
  t.ok(readmeCurls.length >= 3, `the README has curl examples (${readmeCurls.length})`);
  // Every curl line of the README and of the self-hosting page, each run once.
  const curls = [...new Set([...readmeCurls, ...guideCommands.filter((c) => c.startsWith('curl '))])];
  // Markets appear once the recorders have polled the emulated catalogue.
  await waitFor(async () => ((await getJson(`${url}/v3/btc/markets`, key!)).body?.data?.length ?? 0) > 0, 30_000);
  for (const line of curls) {
    const target = /"?(http:\/\/127\.0\.0\.1:8080[^"\s]*)"?/.exec(line)?.[1];
    t.ok(target, `${line}: has a URL`);
    const withKey = line.includes('Bearer $KEY');
    const res = await getJson(target!.replace('http://127.0.0.1:8080', url), withKey ? key! : undefined);
    t.equal(res.status, 200, `${line} → 200`);
    t.type(res.body, 'object', `${line} → JSON`);
    if (Array.isArray(res.body?.data)) t.ok(res.body.data.length > 0, `${line} → some data`);
  }

  // keys create / list / revoke, exactly as printed, against the demo's data dir.
  const create = commands.find((c) => c.startsWith('node dist/cli.js keys create'));
  t.ok(create, 'the README shows keys create');
  const guideKeys = guideCommands.filter((c) => c.startsWith('node dist/cli.js keys '));
  t.same(
    guideKeys,
    commands.filter((c) => c.startsWith('node dist/cli.js keys ')),
    'docs/self-hosting.md prints the same keys commands',
  );
  const created = await runCliOnce([...create!.replace('node dist/cli.js ', '').split(/\s+/), '--data-dir', dataDir]);
  t.equal(created.code, 0, `keys create exits 0 (${create} → ${created.stderr.trim()})`);
  const newKey = created.stdout.trim();
  t.match(newKey, /^pmt_[0-9a-f]+_\S+$/, 'keys create prints the key alone on one line');
  const ok = await waitFor(async () => (await getJson(`${url}/v3/btc/markets`, newKey)).status === 200, 5000);
  t.ok(ok, 'the running server accepts the new key within a moment');
  const list = await runCliOnce(['keys', 'list', '--data-dir', dataDir]);
  t.equal(list.code, 0, `keys list exits 0 ${list.stderr.trim()}`);
  t.match(list.stdout, /alice/, 'keys list shows the new key by name');
  // The secret is everything after the id: base64url, so it may itself hold '_' (a split('_')[2]
  // once took "p" from a secret "p_…" and found it in "paid").
  const secret = /^pmt_[0-9a-f]+_(.+)$/.exec(newKey)![1];
  t.ok(secret.length >= 40 && !list.stdout.includes(secret), 'keys list never shows a secret');
  const id = newKey.split('_')[1];
  const revoke = await runCliOnce(['keys', 'revoke', id, '--data-dir', dataDir]);
  t.equal(revoke.code, 0, `keys revoke <id> exits 0 ${revoke.stderr.trim()}`);
  const refused = await waitFor(async () => (await getJson(`${url}/v3/btc/markets`, newKey)).status === 401, 5000);
  t.ok(refused, 'a revoked key is refused within a moment');

  t.equal(await demo.stop(15_000, 'SIGINT'), 0, 'Ctrl-C (SIGINT) stops demo cleanly with exit 0');
});
