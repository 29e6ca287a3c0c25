// Push-driven freshness on real processes: a `pmtape serve` child whose safety-net re-check is an
// hour (so only file events can show a change) serves books appended by separate writer processes:
// a market not recorded yet (no folder: its parent is watched), appends to one day file, a new day
// file (rollover), `pmtape compact` deleting the logs (served from Parquet, unchanged), and a
// writer restarted afterwards. The append-to-served delay is printed, not asserted (a timing
// bound is a benchmark's, see `npm run bench -- api`); the bound here only ends a hung wait.

import t from 'tap';
import { spawn, type ChildProcess } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { createKey } from '../../src/api/plugins/keys.js';
import { DAY_MS, utcDay } from '../../src/schema/time.js';
import { catalog, coinMarket, tmpDataDir, writeLog } from './helpers.js';

const CLI = fileURLToPath(new URL('../../cli.js', import.meta.url));
const WRITER = fileURLToPath(new URL('./stream-writer-child.js', import.meta.url));
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

const ID = 'push-1';
const market = {
  ...coinMarket,
  market_id: ID,
  outcomes: [
    { label: 'Up', token_id: 'p-up' },
    { label: 'Down', token_id: 'p-down' },
  ],
};
const D1 = utcDay(Date.now() - 3 * DAY_MS);
const D2 = utcDay(Date.now() - 2 * DAY_MS);
const D3 = utcDay(Date.now() - DAY_MS);
const at = (day: string, h: number): number => Date.parse(`${day}T00:00:00.000Z`) + h * 3_600_000;
const book = (t: number, bid: string) => ({
  type: 'book',
  token_id: 'p-up',
  units: 'decimal',
  bids: [[bid, '10']],
  asks: [['0.60', '5']],
  recv_ts: t,
  source_ts: t - 2,
});

function serve(t: { teardown(fn: () => unknown): void }, dataDir: string): Promise<string> {
  const child = spawn(process.execPath, [CLI, 'serve', '--data-dir', dataDir, '--port', '0'], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, PMTAPE_LOG_LEVEL: 'warn', PMTAPE_RATE_LIMITS: 'off', PMTAPE_LATEST_RECHECK_MS: '3600000' },
  });
  t.teardown(() => void (child.exitCode === null && child.kill('SIGKILL')));
  let err = '';
  child.stderr.on('data', (d) => (err += d));
  return new Promise((resolve, reject) => {
    createInterface({ input: child.stdout }).on('line', (l) => {
      const m = /^ready (\S+)$/.exec(l);
      if (m) resolve(m[1]);
    });
    child.once('exit', (c) => reject(new Error(`serve exited ${c}: ${err.slice(-2000)}`)));
  });
}

/** A writer process (test/api/stream-writer-child.ts): one JSON command a line, the last seq back. */
function writer(t: { teardown(fn: () => unknown): void }, dataDir: string) {
  const child: ChildProcess = spawn(process.execPath, [WRITER, dataDir, 'coin', ID], { stdio: ['pipe', 'pipe', 'inherit'] });
  t.teardown(() => void (child.exitCode === null && child.kill('SIGKILL')));
  const answers: string[] = [];
  const waiting: ((l: string) => void)[] = [];
  createInterface({ input: child.stdout! }).on('line', (l) => {
    if (l === 'ready') return; // printed once the log is open
    if (waiting.length) waiting.shift()!(l);
    else answers.push(l);
  });
  const ask = (cmd: object): Promise<string> => {
    child.stdin!.write(`${JSON.stringify(cmd)}\n`);
    return answers.length ? Promise.resolve(answers.shift()!) : new Promise((r) => waiting.push(r));
  };
  return {
    append: async (obs: object): Promise<number> => Number(await ask({ op: 'append', obs: [obs] })),
    close: async (): Promise<void> => {
      const exited = new Promise((r) => child.once('exit', r));
      await ask({ op: 'close' });
      await exited;
    },
  };
}

function run(args: string[]): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, [CLI, ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, PMTAPE_LOG_LEVEL: 'silent' },
    });
    let out = '';
    p.stdout.on('data', (d) => (out += d));
    p.stderr.on('data', (d) => (out += d));
    p.once('exit', (code) => resolve({ code, out }));
  });
}

t.test('latest follows other processes by file events: new market, appends, rollover, compaction, restart', async (t) => {
  const dataDir = tmpDataDir(t);
  await writeLog(dataDir, 'coin', 'catalog', ID, [catalog(market, at(D1, 0))]);
  const key = (await createKey(dataDir, 'paid', 'push')).key;
  const base = await serve(t, dataDir);
  const url = `${base}/v3/btc/markets/${ID}/orderbook/latest`;
  const get = async (): Promise<{ status: number; body: any }> => {
    const r = await fetch(url, { headers: { authorization: `Bearer ${key}` } });
    return { status: r.status, body: await r.json() };
  };
  const delays: number[] = [];
  /** Polls until the served seq is `seq` (bounded at 20 s: a hang, not a timing assertion). */
  const served = async (seq: number, what: string): Promise<any> => {
    const t0 = performance.now();
    let r = await get();
    while (r.body?.data?.seq !== seq && performance.now() - t0 < 20_000) {
      await sleep(2);
      r = await get();
    }
    delays.push(performance.now() - t0);
    t.equal(r.body?.data?.seq, seq, `${what}: served (after ${Math.round(performance.now() - t0)} ms)`, { body: r.body });
    return r.body?.data;
  };

  const none = await get();
  t.equal(none.status, 404, 'no book recorded yet: 404 (and the market is now watched through its parent folder)');

  const w = writer(t, dataDir);
  const s1 = await w.append(book(at(D1, 10), '0.41'));
  await served(s1, 'first book of a market that had no folder');
  const s2 = await w.append(book(at(D1, 11), '0.42'));
  const b2 = await served(s2, 'an append to the same day file');
  t.same(b2.books.find((b: any) => b.token_id === 'p-up').bids, [[0.42, 10]]);
  const s3 = await w.append(book(at(D2, 9), '0.43'));
  const b3 = await served(s3, 'a book in a new day file (day rollover)');
  t.equal(b3.receive_time, new Date(at(D2, 9)).toISOString());
  await w.close();

  // Compaction deletes both logs (retention 0): the day is served from Parquet, the same answer.
  const cfg = join(dataDir, 'retention-0.json');
  await writeFile(cfg, JSON.stringify({ storage: { retention_days: 0 } }));
  const compact = await run(['compact', '--all', '--data-dir', dataDir, '--config', cfg]);
  t.equal(compact.code, 0, 'compact --all exits 0', { output: compact.out });
  t.match(compact.out, new RegExp(`deleted .*${D2}\\.log`), 'the log of the newest day was deleted');
  for (let i = 0; i < 50; i++) await sleep(5); // let the deletion's events arrive, then check the answer
  const afterCompact = await get();
  t.same(afterCompact.body.data, b3, 'after compaction and log deletion the latest book is unchanged');

  // A writer started again (a restarted recorder) continues seq after the compacted records.
  const w2 = writer(t, dataDir);
  const s4 = await w2.append(book(at(D3, 8), '0.44'));
  t.equal(s4, s3 + 1, 'seq continues after the compacted log');
  const b4 = await served(s4, 'a book appended after compaction by a new writer process');
  t.same(b4.books.find((b: any) => b.token_id === 'p-up').bids, [[0.44, 10]]);
  const s5 = await w2.append(book(Date.now(), '0.45'));
  await served(s5, "a book in today's file");
  await w2.close();
  t.comment(
    `append-to-served delays (ms, ack to first answer showing it; polled every 2 ms): ${delays.map((d) => d.toFixed(1)).join(', ')}`,
  );
});
