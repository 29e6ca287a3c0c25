// `keys create` and `keys revoke` killed with SIGKILL at random instants: the key file always
// parses, holds every key whose creation was acknowledged (printed), keeps every acknowledged
// revocation, and a killed command's lock never blocks the next one. Rounds: crashRounds().

import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { listKeys } from '../../src/api/plugins/keys.js';
import { cliPath, crashRounds, kill9, startNode } from '../storage/helpers/proc.js';

const ROUNDS = crashRounds(6);

t.test(`keys create/revoke under ${ROUNDS} kill -9 at random instants`, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'pmtape-keys-crash-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const created = new Map<string, string>(); // id → key, acknowledged
  const revoked = new Set<string>(); // acknowledged revocations
  // How long a whole command takes here, so the kills land anywhere inside one.
  const t0 = Date.now();
  const calib = startNode(cliPath, ['keys', 'create', '--plan', 'free', '--name', 'calibrate', '--data-dir', dir]);
  const calibKey = await calib.waitFor(/^pmt_/);
  await calib.exited;
  created.set(/^pmt_([0-9a-f]{12})_/.exec(calibKey)![1], calibKey);
  const runMs = Date.now() - t0;
  let killedMidway = 0;
  for (let round = 0; round < ROUNDS; round++) {
    const revoke = round % 3 === 2 && created.size > revoked.size;
    const target = revoke ? [...created.keys()].find((id) => !revoked.has(id))! : null;
    const args = revoke
      ? ['keys', 'revoke', target!, '--data-dir', dir]
      : ['keys', 'create', '--plan', round % 2 ? 'paid' : 'free', '--name', `k${round}`, '--data-dir', dir];
    const child = startNode(cliPath, args);
    t.teardown(() => kill9(child));
    const at = Math.random() * runMs * 1.2;
    await Promise.race([child.exited, new Promise((r) => setTimeout(r, at))]);
    await kill9(child);
    const { code } = await child.exited;
    if (code === null) killedMidway++;
    if (revoke && code === 0) revoked.add(target!);
    const printed = child.lines.find((l) => l.startsWith('pmt_'));
    if (!revoke && printed) created.set(/^pmt_([0-9a-f]{12})_/.exec(printed)![1], printed);

    // The file parses and holds everything acknowledged so far.
    let keys;
    try {
      keys = await listKeys(dir);
    } catch (e) {
      t.fail(`round ${round}: the key file does not parse: ${(e as Error).message}`);
      return;
    }
    const byId = new Map(keys.map((k) => [k.id, k]));
    const lost = [...created.keys()].filter((id) => !byId.has(id));
    t.same(lost, [], `round ${round} (killed after ${at.toFixed(0)} ms): every acknowledged key is there`);
    const unrevoked = [...revoked].filter((id) => byId.get(id)?.revoked_ts === null);
    t.same(unrevoked, [], `round ${round}: every acknowledged revocation holds`);
  }
  t.ok(killedMidway > 0, `${killedMidway} of ${ROUNDS} commands were killed before they finished`);
  // A killed holder's lock is taken over at once: one more command completes promptly.
  const last = startNode(cliPath, ['keys', 'create', '--plan', 'free', '--name', 'after', '--data-dir', dir]);
  t.match(await last.waitFor(/^pmt_/, 60_000), /^pmt_/, 'the next command is not blocked by a dead lock');
  t.equal((await last.exited).code, 0);
});
