// The recorder host: the hash shard filter, kind selection, and a sharded record process that
// writes only its own markets' logs.

import t from 'tap';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { statusDir, statusPath, writeStatus } from '../../src/recorders/status.js';
import { startSim } from '../../src/sim/server.js';
import { inShard, shardHash, startRecorders } from '../../src/recorders/host.js';
import { readAll, simConfig, sleep, tempDir, waitFor } from './helpers.js';

t.test('shards partition market ids: each id in exactly one of n shards, stable', async (t) => {
  const ids = Array.from({ length: 3000 }, (_, i) => String(1_500_000 + i * 7));
  const per = [0, 0, 0];
  let notExactlyOne = 0;
  for (const id of ids) {
    const hits = [0, 1, 2].filter((k) => inShard(id, { k, n: 3 }));
    if (hits.length !== 1) notExactlyOne++;
    per[hits[0]]++;
  }
  t.equal(notExactlyOne, 0);
  t.ok(
    per.every((n) => n > 800),
    `balanced enough: ${per.join('/')}`,
  );
  t.equal(shardHash('1557558'), shardHash('1557558'));
  t.ok(inShard('anything', null), 'no shard config: every market');
});

t.test('unknown kinds are refused by name; disabled upstreams are skipped', async (t) => {
  const dir = tempDir();
  const sim = await startSim({ seed: 1, coins: ['btc'], windows: ['5m'], windowScale: 0.02 });
  t.teardown(() => sim.close());
  const { config } = simConfig(sim.config, dir);
  await t.rejects(startRecorders(config, { kinds: ['teleport'], statusFile: false }), /unknown recorder kind "teleport"/);
  const off = simConfig({ ...sim.config, upstreams: { ...(sim.config.upstreams as object), clob: { enabled: false } } }, tempDir()).config;
  const host = await startRecorders(off, { kinds: ['clob', 'catalog'], statusFile: false });
  t.same(
    host.recorders.map((r) => r.kind),
    ['catalog'],
  );
  await host.stop();
});

t.test('a sharded process records only the markets of its shard', async (t) => {
  const sim = await startSim({ seed: 21, windowScale: 0.02, rate: 100, coins: ['btc', 'eth', 'bnb'], windows: ['5m'] });
  t.teardown(() => sim.close());
  const dir = tempDir();
  const { config } = simConfig(sim.config, dir, { shard: '1/2', recorders: { catalog_poll_ms: 200 } });
  const host = await startRecorders(config, { kinds: ['clob', 'catalog'], statusFile: false });
  await waitFor(async () => (await readAll(dir, 'books')).size > 0, 10_000, 200);
  await sleep(300);
  await host.stop();
  const catalog = await readAll(dir, 'catalog');
  const books = await readAll(dir, 'books');
  t.ok(catalog.size > 0 && books.size > 0);
  for (const id of [...catalog.keys(), ...books.keys()]) t.ok(inShard(id, { k: 1, n: 2 }), `${id} belongs to shard 1/2`);
});

t.test('status files of killed record processes are cleaned up; live ones are kept', async (t) => {
  const dir = tempDir();
  const dead = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
  const deadPid = Number(dead.stdout);
  const old = Date.now() - 60_000;
  const base = { started_ts: old, updated_ts: old, kinds: {}, connected: { coin: [], 'wallet-prediction': [], 'yesno-exchange': [] } };
  writeStatus(dir, { ...base, pid: deadPid });
  writeStatus(dir, { ...base, pid: process.ppid });
  // The dead process was killed inside a durable write: its temp file goes with its status file.
  const deadTemp = join(statusDir(dir), `.record-${deadPid}.json.tmp-${deadPid}-0`);
  writeFileSync(deadTemp, '{"pid"');
  const sim = await startSim({ seed: 1, coins: ['btc'], windows: ['5m'], windowScale: 0.02 });
  t.teardown(() => sim.close());
  const { config } = simConfig(sim.config, dir, { recorders: { status_interval_ms: 100 } });
  const host = await startRecorders(config, { kinds: ['catalog'] });
  t.ok(await waitFor(() => !existsSync(statusPath(dir, deadPid)), 5000), 'the dead process file is removed');
  t.notOk(existsSync(deadTemp), 'and the temp file it was writing');
  t.ok(existsSync(statusPath(dir, process.ppid)), 'a live pid keeps its file');
  t.ok(existsSync(statusPath(dir)), 'this process has its own');
  await host.stop();
  t.notOk(existsSync(statusPath(dir)));
});
