// Durable writes (storage/durable.ts) on real files: a child rewriting one file is SIGKILLed at
// random moments, and after each kill the published file is one complete version, never a part;
// failures leave no temp file behind; directory fsync throws only for real errors.

import t from 'tap';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fsyncDir, isDurableTemp, prepareDurable, writeFileDurable, writeFileDurableSync } from '../../src/storage/durable.js';
import { helperPath, kill9, startNode } from './helpers/proc.js';

const ROUNDS = 8;

// `replace` (replaceFile) is not fsynced: a kill, unlike a power loss, still leaves a whole version.
for (const mode of ['async', 'sync', 'prepared', 'replace'] as const) {
  t.test(`a ${mode} writer killed at random moments leaves the last or the next version, complete`, async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'pmtape-durable-'));
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    const path = join(dir, 'state.json');
    let lastAcked = 0;
    for (let round = 0; round < ROUNDS; round++) {
      const child = startNode(helperPath('durable-child.js'), [path, mode]);
      t.teardown(() => kill9(child));
      const target = 1 + Math.floor(Math.random() * 15);
      await child.waitFor(new RegExp(`^wrote ${target}$`));
      await new Promise((r) => setTimeout(r, Math.random() * 20));
      await kill9(child);
      const acked = Math.max(...child.lines.filter((l) => l.startsWith('wrote ')).map((l) => Number(l.slice(6))));
      const v = JSON.parse(readFileSync(path, 'utf8')) as { n: number; sha: string; body: string };
      t.equal(createHash('sha256').update(v.body).digest('hex'), v.sha, `round ${round}: the published file is one whole version`);
      t.ok(
        v.n === acked || v.n === acked + 1,
        `round ${round}: it is the last acknowledged version (${acked}) or the one in flight, got ${v.n}`,
      );
      lastAcked = acked;
      // A temp file may survive a kill, but only under its own hidden name.
      for (const name of readdirSync(dir))
        t.ok(name === 'state.json' || isDurableTemp(name), `round ${round}: ${name} is the file or a temp`);
    }
    t.ok(lastAcked > 0);
  });
}

t.test('a write that fails removes its temp file and keeps the old content', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'pmtape-durable-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const blocked = join(dir, 'blocked');
  mkdirSync(join(blocked, 'inside'), { recursive: true }); // renaming a file over a non-empty folder fails
  await t.rejects(writeFileDurable(blocked, 'x'));
  t.throws(() => writeFileDurableSync(blocked, 'x'));
  t.same(readdirSync(dir), ['blocked'], 'no temp file lingers');
  t.ok(statSync(blocked).isDirectory());
  const file = join(dir, 'f');
  await writeFileDurable(file, 'one', { mode: 0o600 });
  writeFileDurableSync(file, 'two');
  t.equal(readFileSync(file, 'utf8'), 'two');
  await writeFileDurable(file, 'three', { mode: 0o600 });
  t.equal(statSync(file).mode & 0o777, 0o600, 'the mode applies to the replacement');
  t.same(readdirSync(dir).sort(), ['blocked', 'f']);
});

t.test('a prepared write is invisible until its commit; an abort keeps the old content and no temp', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'pmtape-durable-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'state.json');
  await writeFileDurable(file, 'old');
  const w = await prepareDurable(file, 'new');
  t.equal(readFileSync(file, 'utf8'), 'old', 'not visible before the commit');
  t.equal(readdirSync(dir).filter(isDurableTemp).length, 1, 'its temp file is on disk');
  await w.commit();
  t.equal(readFileSync(file, 'utf8'), 'new');
  t.same(readdirSync(dir), ['state.json'], 'the temp file became the file');
  const dropped = await prepareDurable(file, 'dropped');
  await dropped.abort();
  t.equal(readFileSync(file, 'utf8'), 'new', 'an aborted write changes nothing');
  t.same(readdirSync(dir), ['state.json'], 'and leaves no temp file');
  const fresh = join(dir, 'absent.json');
  await (await prepareDurable(fresh, 'x')).abort();
  t.throws(() => readFileSync(fresh), { code: 'ENOENT' }, 'an aborted first write leaves no file');
});

t.test('fsyncDir throws for a folder that is not there (only "unsupported" errors are ignored)', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'pmtape-durable-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  await fsyncDir(dir);
  await t.rejects(fsyncDir(join(dir, 'missing')), { code: 'ENOENT' });
});
