// `verify --repair` killed with SIGKILL at random instants over a data dir full of torn tails and
// missing or damaged indexes: the next repair always completes, `verify` is then clean, and every
// record before the damage is still there, exactly once (a repair never cuts a good record, even
// when it was itself interrupted). Rounds: crashRounds().

import t from 'tap';
import { spawnSync } from 'node:child_process';
import { appendFileSync, cpSync, mkdtempSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { indexFilePath, logFilePath, openReader, openWriter, type LogKey } from '../../src/storage/testing.js';
import { mixed } from './helpers/records.js';
import { cliPath, crashRounds, kill9, startNode } from './helpers/proc.js';

const ROUNDS = crashRounds(4);
const DAY = '2026-01-05';
const T = Date.UTC(2026, 0, 5);
const MARKETS = 12;

const keyOf = (i: number): LogKey => ({ family: 'coin', stream: 'books', market: `m${i}` });

async function seqs(dir: string, k: LogKey): Promise<number[]> {
  const out: number[] = [];
  for await (const it of openReader(dir, k).read('start')) out.push(it.rec.seq);
  return out;
}

t.test(`verify --repair under ${ROUNDS} kill -9 at random instants`, async (t) => {
  const base = mkdtempSync(join(tmpdir(), 'pmtape-verify-crash-'));
  t.teardown(() => rmSync(base, { recursive: true, force: true }));
  const template = join(base, 'template');
  const good = new Map<number, number>(); // market → records before the damage
  for (let i = 0; i < MARKETS; i++) {
    const w = await openWriter(template, keyOf(i), { fsyncIntervalMs: 0 });
    const n = 300 + i * 40;
    await Promise.all(Array.from({ length: n }, (_, k) => w.append(mixed(T + k, k + 1))));
    await w.close();
    good.set(i, n);
    const log = logFilePath(template, keyOf(i), DAY);
    const idx = indexFilePath(template, keyOf(i), DAY);
    // Damage of every kind a crash leaves: torn frames, a missing index, a garbage index tail.
    if (i % 3 === 0) appendFileSync(log, Buffer.from([200, 0, 0, 0, 9, 9, 9, 9, 9]));
    if (i % 3 === 1) unlinkSync(idx);
    if (i % 3 === 2) {
      appendFileSync(idx, Buffer.from('garbage index tail'));
      appendFileSync(log, Buffer.alloc(37, 7));
    }
  }
  const verify = (dir: string, ...args: string[]) =>
    spawnSync(process.execPath, [cliPath, 'verify', '--data-dir', dir, ...args], { encoding: 'utf8' });
  t.equal(verify(template).status, 1, 'the template is damaged');
  // How long an uninterrupted repair takes, so kills land anywhere inside one.
  const calib = join(base, 'calib');
  cpSync(template, calib, { recursive: true });
  const t0 = Date.now();
  t.equal(verify(calib, '--repair').status, 0);
  const runMs = Date.now() - t0;

  const dir = join(base, 'run');
  cpSync(template, dir, { recursive: true });
  let killed = 0;
  for (let round = 0; round < ROUNDS; round++) {
    // Repairs interrupted again and again on the same dir (each may have repaired some files).
    const child = startNode(cliPath, ['verify', '--repair', '--data-dir', dir]);
    t.teardown(() => kill9(child));
    await Promise.race([child.exited, new Promise((r) => setTimeout(r, Math.random() * runMs))]);
    if (child.proc.exitCode === null) killed++;
    await kill9(child);
    if (round % 10 === 9 || round === ROUNDS - 1) {
      // Every tenth round (and the last) a copy is repaired to the end and checked.
      const check = join(base, `check${round}`);
      cpSync(dir, check, { recursive: true });
      const r = verify(check, '--repair');
      t.equal(r.status, 0, `round ${round}: the next repair completes: ${r.stderr.slice(-300)}`);
      t.equal(verify(check).status, 0, `round ${round}: verify is clean afterwards`);
      for (let i = 0; i < MARKETS; i++) {
        const s = await seqs(check, keyOf(i));
        t.same(
          s,
          Array.from({ length: good.get(i)! }, (_, k) => k + 1),
          `round ${round}: m${i} keeps every good record, once`,
        );
      }
      rmSync(check, { recursive: true, force: true });
    }
  }
  t.ok(killed > 0 || ROUNDS < 3, `${killed} of ${ROUNDS} repairs were killed before they finished`);
  writeFileSync(join(base, 'done'), '');
});
