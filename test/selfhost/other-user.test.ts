// Issue 39's check: the suite passed from a clone under a folder anyone can enter and failed from one
// under a 0700 folder (/root, `mktemp -d`), where a process of another user cannot reach the checkout.
// Here a clone's runtime files are laid under a fresh 0700 folder and, as root: the clone's own CLI
// cannot be run by uid 65534 (so this reproduces the failure the replica check met), and the copy
// cliForOtherUser makes of that clone serves a read-only data dir as uid 65534, without tap's loader.

import t from 'tap';
import { chmodSync, mkdtempSync, realpathSync, rmSync, statSync, symlinkSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO, getJson, runCli, runCliOnce, tempDir } from './helpers.js';
import { cliForOtherUser, closedAncestors, copyTree } from './other-user.js';

t.setTimeout(240_000);

t.test('a clone under a 0700 folder: another user runs a copy of its CLI, never the clone', async (t) => {
  if (process.getuid?.() !== 0) {
    t.comment('not root: serving as another user needs root; the check is skipped');
    return;
  }
  const priv = mkdtempSync(join(tmpdir(), 'pmtape-private-'));
  t.teardown(() => rmSync(priv, { recursive: true, force: true }));
  t.equal(statSync(priv).mode & 0o777, 0o700, 'mkdtemp makes a folder only its owner can enter');
  const clone = join(priv, 'clone');
  copyTree(REPO, clone, ['node_modules', 'dist', 'data', '.git', '.tap', '.toolchains', 'src', 'test', 'tools', 'docs', 'clients']);
  copyTree(join(REPO, 'dist', 'src'), join(clone, 'dist', 'src'));
  copyTree(join(REPO, 'dist'), join(clone, 'dist'), ['src', 'test', 'tools']);
  symlinkSync(realpathSync(join(REPO, 'node_modules')), join(clone, 'node_modules'));

  const shared = tempDir(t);
  chmodSync(shared, 0o755);
  const data = join(shared, 'data');
  const key = (await runCliOnce(['keys', 'create', '--plan', 'paid', '--name', 'other', '--data-dir', data])).stdout.trim();
  t.match(key, /^pmt_/, 'a key was created');
  const env = { PMTAPE_PORT: '0', PMTAPE_RATE_LIMITS: 'off' };
  // A first serve, as root, lays what a data dir holds (the cursor secret); then it is made read-only.
  const first = runCli(t, ['serve', '--data-dir', data], { env, readyTimeoutMs: 60_000 });
  await first.ready;
  t.equal(await first.stop(15_000), 0, 'a first serve as root prepared the data dir');
  execFileSync('chmod', ['-R', 'a+rX,a-w', data]);

  const direct = runCli(t, ['serve', '--data-dir', data], { cli: join(clone, 'dist', 'cli.js'), cwd: shared, env, uid: 65534, gid: 65534 });
  t.not(await direct.exited, 0, "the clone's own CLI, run by uid 65534, exits");
  t.notMatch(direct.stdout, /^ready /m, 'before ready');
  t.match(
    direct.stderr,
    /EACCES|ERR_MODULE_NOT_FOUND|Cannot find module/,
    `for want of access to the clone (${direct.stderr.split('\n').find((l) => /Error/.test(l)) ?? ''})`,
  );

  t.throws(
    () => cliForOtherUser(join(priv, 'cli'), clone),
    /other users cannot enter .*pmtape-private-/,
    'a copy the other user could not reach is refused, naming the folder',
  );
  const cli = cliForOtherUser(join(shared, 'cli'), clone);
  t.same(closedAncestors(cli), [], 'the copy is in folders anyone can enter');
  const ro = runCli(t, ['serve', '--data-dir', data], {
    cli,
    cwd: join(shared, 'cli'),
    env,
    noLoader: true,
    uid: 65534,
    gid: 65534,
    readyTimeoutMs: 60_000,
  });
  const url = await ro.ready;
  const res = await getJson(`${url}/v3/coverage`, key);
  t.equal(res.status, 200, 'uid 65534 serves the read-only data dir from the copy');
  t.same(res.body.data, [], 'an empty data dir has no coverage');
});
