// The toolchain setup `npm test` runs (tools/toolchains/setup.ts), as a real process: a missing tool
// fails it under CI and only warns elsewhere, each with the message saying how to get the tool; an
// unknown name is refused; a second run over an ensured cache does nothing. And requireTool: a missing
// tool fails the test under CI, skips it elsewhere.

import t from 'tap';
import { execFile } from 'node:child_process';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { requireTool } from '../../helpers/toolchains.js';

const SETUP = resolve(dirname(fileURLToPath(import.meta.url)), '../../../tools/toolchains/setup.js');

function setup(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number; stderr: string }> {
  return new Promise((res) => {
    execFile(process.execPath, [SETUP, ...args], { env: { ...process.env, ...env }, timeout: 120_000 }, (err, _out, stderr) => {
      res({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, stderr });
    });
  });
}

const missing = { PMTAPE_CHROMIUM: '/nonexistent/chromium' };

t.test('a missing tool fails setup under CI and warns elsewhere, saying how to get it', async (t) => {
  const ci = await setup(['chromium'], { ...missing, CI: 'true' });
  t.equal(ci.code, 1, 'CI=true: exit 1');
  t.match(ci.stderr, /chromium unavailable .*Chromium not found at \/nonexistent\/chromium: apt-get install chromium/);
  t.match(ci.stderr, /missing under CI: failing/);
  for (const off of ['false', '0', '']) {
    const local = await setup(['chromium'], { ...missing, CI: off });
    t.equal(local.code, 0, `CI=${JSON.stringify(off)}: exit 0`);
    t.match(local.stderr, /warning: 1 toolchain\(s\) missing; the tests that need them will be skipped/);
  }
});

t.test('an unknown toolchain is refused with the known names', async (t) => {
  const r = await setup(['nope'], {});
  t.equal(r.code, 2);
  t.match(r.stderr, /unknown nope; known: .*\bpython\b/);
});

t.test('requireTool fails under CI and skips elsewhere', async (t) => {
  const saved = { CI: process.env.CI, PMTAPE_CHROMIUM: process.env.PMTAPE_CHROMIUM };
  t.teardown(() => {
    for (const [k, v] of Object.entries(saved))
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
  });
  process.env.PMTAPE_CHROMIUM = missing.PMTAPE_CHROMIUM;
  const calls: string[] = [];
  const fake = {
    fail: (m: string) => calls.push(`fail ${m}`),
    pass: (m: string, e: { skip: string }) => calls.push(`skip ${m} ${e.skip}`),
  };
  process.env.CI = 'true';
  t.equal(requireTool(fake, 'chromium'), null);
  process.env.CI = 'false';
  t.equal(requireTool(fake, 'chromium'), null);
  t.match(calls, [
    /^fail chromium missing .*under CI a missing tool fails the test/,
    /^skip chromium chromium missing .*setup\.js chromium/,
  ]);
  t.throws(() => requireTool(fake, 'nope'), /no toolchain named nope/);
});

t.test('a second run over an ensured python cache does nothing', async (t) => {
  if (requireTool(t, 'python') === null) return;
  const r = await setup(['python'], {});
  t.equal(r.code, 0);
  t.notMatch(r.stderr, /toolchains: python: (making|installing)/, 'the stamps match: no step runs');
});

t.test('a second run over ensured engine venvs does nothing', async (t) => {
  if (requireTool(t, 'nautilus') === null || requireTool(t, 'hftbacktest') === null) return;
  const r = await setup(['nautilus', 'hftbacktest'], {});
  t.equal(r.code, 0);
  t.notMatch(r.stderr, /toolchains: (nautilus|hftbacktest): (making|installing)/, 'the stamps match: no step runs');
});
