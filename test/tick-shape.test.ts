// nextTick's record literal stays monomorphic once tick-shape.ts has run, in a bare process after
// full collections and in a real `pmtape serve` after requests; without it the same collections
// make the literal's define sites megamorphic (the V8 behaviour the module works around). The
// feedback states are read from V8 itself: `%DebugPrint(process.nextTick)` under
// --allow-natives-syntax prints each feedback slot with its state.

import t from 'tap';
import { spawn } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { keptTickRecord } from '../src/tick-shape.js';
import { CLI } from './selfhost/helpers.js';

const TICK_SHAPE = pathToFileURL(resolve(dirname(fileURLToPath(import.meta.url)), '../src/tick-shape.js')).href;
const NATIVES = ['--allow-natives-syntax', '--expose-gc'];

/** The states of nextTick's `DefineKeyedOwnPropertyInLiteral` slots in a `%DebugPrint` dump (first dump wins). */
function literalSlotStates(dump: string): string[] {
  const bySlot = new Map<string, string>();
  for (const m of dump.matchAll(/slot #(\d+) DefineKeyedOwnPropertyInLiteral (\w+)/g)) if (!bySlot.has(m[1])) bySlot.set(m[1], m[2]);
  return [...bySlot.values()];
}

/**
 * The environment of the probed processes: plain node (the test runner's NODE_OPTIONS would load
 * its own modules into them first).
 */
function plainEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, ...extra };
  delete env.NODE_OPTIONS;
  return env;
}

/**
 * Runs `node <args>` to completion; resolves with its stdout. V8 prints through C stdio: stdout is a
 * file, because writes to a non-blocking pipe can be lost, and each script dumps twice, because the
 * buffer is not always flushed at exit (the second dump pushes the whole first one out).
 */
async function runNode(dir: string, args: string[]): Promise<string> {
  const path = join(dir, `stdout-${Math.random().toString(36).slice(2)}.txt`);
  const fd = openSync(path, 'w');
  const p = spawn(process.execPath, args, { stdio: ['ignore', fd, 'pipe'], env: plainEnv() });
  closeSync(fd);
  let err = '';
  p.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const code = await new Promise<number | null>((r) => p.on('close', r));
  if (code !== 0) throw new Error(`node exited ${code}: ${err.slice(-2000)}`);
  return readFileSync(path, 'utf8');
}

/** Ticks, then full collections while no tick record is alive, eight times; then the dump. */
const churn = (first: string): string => `${first}
const tick = () => new Promise((r) => process.nextTick(r));
for (let i = 0; i < 8; i++) { for (let j = 0; j < 50; j++) await tick(); globalThis.gc(); }
%DebugPrint(process.nextTick);
%DebugPrint(process.nextTick);`;

t.test('a tick record is captured and kept', async (t) => {
  const rec = keptTickRecord() as Record<string | symbol, unknown> | null;
  t.ok(rec, 'kept');
  const symbols = Object.getOwnPropertySymbols(rec!).map((s) => s.description);
  t.same(symbols, ['async_id_symbol', 'trigger_async_id_symbol'], 'the two internal symbols of a TickObject, in literal order');
  t.same(Object.keys(rec!), ['callback', 'args'], 'then callback and args');
});

t.test('full collections make the literal megamorphic without the module, never with it', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'pmtape-tick-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const without = literalSlotStates(await runNode(dir, [...NATIVES, '--input-type=module', '-e', churn('')]));
  t.ok(without.length >= 3, `the dump shows the literal's slots (${without.join(' ')})`);
  // If this fails, the runtime no longer drops the transitions and tick-shape.ts can go.
  t.ok(without.includes('MEGAMORPHIC'), `without the module a slot goes megamorphic (${without.join(' ')})`);

  const kept = literalSlotStates(
    await runNode(dir, [...NATIVES, '--input-type=module', '-e', churn(`await import(${JSON.stringify(TICK_SHAPE)});`)]),
  );
  t.ok(kept.length >= 3, `slots shown (${kept.join(' ')})`);
  t.ok(
    kept.every((s) => s === 'MONOMORPHIC'),
    `every slot monomorphic with the module (${kept.join(' ')})`,
  );
});

t.test('a real serve keeps the literal monomorphic after start, requests and full collections', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'pmtape-tick-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  // Loaded before the CLI: on SIGUSR2, full collections each followed by ticks (what turns the
  // literal megamorphic when nothing keeps its maps), then nextTick's feedback dumped twice (see
  // runNode), then a marker.
  const probe = join(dir, 'probe.mjs');
  writeFileSync(
    probe,
    `process.on('SIGUSR2', async () => {
  for (let i = 0; i < 4; i++) {
    globalThis.gc();
    for (let j = 0; j < 20; j++) await new Promise((r) => process.nextTick(r));
  }
  %DebugPrint(process.nextTick);
  %DebugPrint(process.nextTick);
  process.stdout.write('probe-done\\n');
});\n`,
  );
  const outPath = join(dir, 'stdout.txt');
  const outFd = openSync(outPath, 'w');
  const proc = spawn(
    process.execPath,
    [...NATIVES, '--import', pathToFileURL(probe).href, CLI, 'serve', '--data-dir', join(dir, 'data'), '--port', '0'],
    {
      env: plainEnv({ PMTAPE_LOG_LEVEL: 'warn', PMTAPE_RATE_LIMITS: 'off' }),
      stdio: ['ignore', outFd, 'ignore'],
    },
  );
  closeSync(outFd);
  t.teardown(() => void proc.kill('SIGKILL'));
  const exited = new Promise((r) => proc.on('exit', r));
  let gone = false;
  void exited.then(() => (gone = true));
  /** Waits (generously: 30 s) until stdout matches `re`. */
  const seen = async (re: RegExp): Promise<RegExpExecArray> => {
    for (let i = 0; i < 600; i++) {
      const m = re.exec(readFileSync(outPath, 'utf8'));
      if (m) return m;
      if (gone) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`no ${re} in serve's stdout: ${readFileSync(outPath, 'utf8').slice(-2000)}`);
  };
  const url = (await seen(/^ready (\S+)$/m))[1];
  for (let i = 0; i < 200; i++) {
    const r = await fetch(`${url}/healthz`);
    await r.arrayBuffer();
  }
  proc.kill('SIGUSR2');
  await seen(/probe-done\n/); // may land inside the dump (C stdio is buffered): taken out below
  proc.kill('SIGTERM');
  await exited;
  const out = readFileSync(outPath, 'utf8');
  const states = literalSlotStates(out.replace('probe-done\n', ''));
  t.ok(states.length >= 3, `slots shown (${states.join(' ')})`, { tail: out.slice(-3000) });
  t.ok(
    states.every((s) => s === 'MONOMORPHIC'),
    `every slot monomorphic in serve (${states.join(' ')})`,
  );
});
