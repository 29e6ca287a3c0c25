// The systemd examples under docs/ must stay true to the CLI: every ExecStart names a real command
// of dist/cli.js, every PMTAPE_* variable is one the config reads, and the self-hosting page
// (docs/self-hosting.md, where the README sends self-hosters) links each file.

import t from 'tap';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { REPO, runCliOnce } from './helpers.js';

const docs = join(REPO, 'docs');
const units = readdirSync(docs).filter((f) => f.endsWith('.service'));
const KNOWN_ENV = ['PMTAPE_DATA_DIR', 'PMTAPE_HOST', 'PMTAPE_PORT', 'PMTAPE_CONFIG', 'PMTAPE_LOG_LEVEL', 'PMTAPE_RATE_LIMITS'];

t.test('every systemd example runs a real command with known settings', async (t) => {
  t.ok(units.includes('pmtape.service'), 'docs/pmtape.service exists');
  const guide = readFileSync(join(docs, 'self-hosting.md'), 'utf8');
  const config = readFileSync(join(REPO, 'src', 'config.ts'), 'utf8');
  const texts = units.map((unit) => readFileSync(join(docs, unit), 'utf8'));
  const commands = texts.map((text) => /^ExecStart=\S*node \S*dist\/cli\.js (\S+)(.*)$/m.exec(text)?.[1] ?? '');
  const registered = (c: string): boolean => {
    try {
      return readFileSync(join(REPO, 'src', 'commands', `${c}.ts`), 'utf8').includes(`.command('${c}')`);
    } catch {
      return false;
    }
  };
  // One real `--help` run proves the wiring; the others are checked against their command modules.
  t.equal((await runCliOnce([commands[0], '--help'])).code, 0, `\`${commands[0]} --help\` runs`);
  for (const [i, unit] of units.entries()) {
    const text = texts[i];
    t.ok(guide.includes(`](${unit})`), `${unit} is linked from docs/self-hosting.md`);
    t.ok(commands[i], `${unit} starts dist/cli.js`);
    t.ok(registered(commands[i]), `${unit}: \`${commands[i]}\` is a command of the CLI`);
    t.match(text, /^KillSignal=SIGTERM$/m, `${unit} stops with SIGTERM (clean flush and close)`);
    for (const m of text.matchAll(/^Environment=(PMTAPE_[A-Z_]+)=/gm)) {
      t.ok(KNOWN_ENV.includes(m[1]) && config.includes(m[1]), `${unit}: ${m[1]} is a setting pmtape reads`);
    }
  }
});
