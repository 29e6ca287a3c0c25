import t from 'tap';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startSim } from '../../../src/sim/server.js';
import { midWindow } from '../yesno/harness.js';
import type { SimMount } from '../../../src/sim/mount.js';
import type { WalletSim } from '../../../src/sim/wallet.js';
import { type LogKey, listMarkets, openReader } from '../../../src/storage/testing.js';
import type { Recorded } from '../../../src/schema/observation.js';

const CLI = fileURLToPath(new URL('../../../cli.js', import.meta.url));
const KEY = 'wallet-operator-key-5c1e';

function record(configFile: string, dataDir: string): { proc: ChildProcess; out: () => string; err: () => string; ready: Promise<void> } {
  const proc = spawn(process.execPath, [CLI, 'record', '--config', configFile, '--data-dir', dataDir, '--kinds', 'yesno,wallet'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  proc.stdout.on('data', (c) => (out += c));
  proc.stderr.on('data', (c) => (err += c));
  const ready = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no ready line: ${err}`)), 30_000);
    proc.stdout.on('data', () => /^ready /m.test(out) && (clearTimeout(timer), resolve()));
    proc.on('exit', () => (clearTimeout(timer), reject(new Error(`exited early: ${err}`))));
  });
  return { proc, out: () => out, err: () => err, ready };
}

async function readAll(dataDir: string, key: LogKey): Promise<Recorded[]> {
  const out: Recorded[] = [];
  for await (const it of openReader(dataDir, key).read('start')) out.push(it.rec);
  return out;
}

async function waitFor(cond: () => Promise<boolean>, ms = 30_000): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await cond().catch(() => false)) return true;
    await new Promise((r) => setTimeout(r, 200));
  }
  return false;
}

t.test('record --kinds yesno,wallet killed with SIGKILL: restart records the downtime gap, no duplicates, no key in logs', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'pmtape-rec2-kill-'));
  // Mid-window (see midWindow): no market opens or closes while the two runs take place.
  const sim = await startSim({ seed: 4, windowScale: 1, now: midWindow() });
  const children: ChildProcess[] = [];
  t.teardown(async () => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    await sim.close();
    rmSync(dir, { recursive: true, force: true });
  });
  (sim.mounts.find((m) => m.prefix === '/wallet') as SimMount & { wallet: WalletSim }).wallet.settings.apiKey = KEY;
  const cfg = sim.config as { upstreams: Record<string, Record<string, unknown>> };
  cfg.upstreams.wallet.api_key = KEY;
  const file = join(dir, 'config.json');
  writeFileSync(file, JSON.stringify({ ...cfg, recorders: { ...(cfg as any).recorders, catalog_poll_ms: 500 }, stale_after_ms: 5000 }));
  const data = join(dir, 'data');

  const a = record(file, data);
  children.push(a.proc);
  await a.ready;
  const enough = async (): Promise<boolean> => {
    const yn = await listMarkets(data, 'yesno-exchange', 'books');
    const w = await listMarkets(data, 'wallet-prediction', 'books');
    if (yn.length === 0 || w.length === 0) return false;
    const y = await readAll(data, { family: 'yesno-exchange', stream: 'books', market: yn[0] });
    const b = await readAll(data, { family: 'wallet-prediction', stream: 'books', market: w[0] });
    return y.length >= 3 && b.length >= 2;
  };
  t.ok(await waitFor(enough), 'both kinds record books');
  const status = JSON.parse(
    readFileSync(
      join(
        data,
        'status',
        readdirSync(join(data, 'status')).find((f) => f.endsWith('.json'))!,
      ),
      'utf8',
    ),
  );
  t.ok(status.kinds.yesno && status.kinds.wallet, 'the status file reports both kinds');
  a.proc.kill('SIGKILL');
  await new Promise((r) => a.proc.once('exit', r));
  const killedAt = Date.now();

  const yTicker = (await listMarkets(data, 'yesno-exchange', 'books'))[0];
  const wMarket = (await listMarkets(data, 'wallet-prediction', 'books'))[0];
  const yKey: LogKey = { family: 'yesno-exchange', stream: 'books', market: yTicker };
  const wKey: LogKey = { family: 'wallet-prediction', stream: 'books', market: wMarket };
  const yBefore = await readAll(data, yKey);
  const wBefore = await readAll(data, wKey);

  const b = record(file, data);
  children.push(b.proc);
  await b.ready;
  const closedGap = (recs: Recorded[]): boolean => recs.some((r) => r.type === 'gap' && r.reason === 'not_recording' && r.end_ts !== null);
  t.ok(await waitFor(async () => closedGap(await readAll(data, yKey)) && closedGap(await readAll(data, wKey))), 'the downtime gaps close');
  b.proc.kill('SIGTERM');
  const code = await new Promise((r) => b.proc.once('exit', (c) => r(c)));
  t.equal(code, 0, 'SIGTERM exits cleanly');

  for (const [key, before] of [
    [yKey, yBefore],
    [wKey, wBefore],
  ] as const) {
    const recs = await readAll(data, key);
    t.same(recs.slice(0, before.length), before, `${key.family}: what was acknowledged before the kill is intact`);
    for (let i = 1; i < recs.length; i++) t.ok(recs[i].seq > recs[i - 1].seq, 'seq strictly increasing, no duplicates');
    const gaps = recs.filter((r) => r.type === 'gap' && r.reason === 'not_recording');
    const open = gaps[0];
    t.ok(open && open.type === 'gap' && open.end_ts === null);
    if (open?.type === 'gap') {
      t.equal(open.start_ts, before.at(-1)!.recv_ts, `${key.family}: the hole starts at the last record before the kill`);
      t.ok(open.recv_ts >= killedAt);
      const closed = gaps[1];
      t.ok(closed?.type === 'gap' && closed.start_ts === open.start_ts && closed.end_ts !== null);
    }
  }
  t.notOk(
    a.err().includes(KEY) || b.err().includes(KEY) || a.out().includes(KEY) || b.out().includes(KEY),
    'the operator key never reaches the logs',
  );
});
