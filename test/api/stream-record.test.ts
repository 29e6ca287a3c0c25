// End to end across processes: `pmtape sim` (with dropped connections), `pmtape record` and
// `pmtape serve` are three child processes; a ws client of `serve` gets the books `record` appends,
// in seq order and equal to the REST snapshots, gap messages for the drops, and a reconnect with
// `after_seq` gets exactly the seqs it missed.

import t from 'tap';
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createKey } from '../../src/api/plugins/keys.js';
import { listMarkets } from '../../src/storage/index.js';
import { sleep, tempDir, TestClient } from './stream-helpers.js';

const CLI = fileURLToPath(new URL('../../cli.js', import.meta.url));

function startCli(t: { teardown(fn: () => unknown): void }, args: string[]): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, [CLI, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, PMTAPE_RATE_LIMITS: 'off', PMTAPE_LOG_LEVEL: 'warn' },
  });
  t.teardown(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  let out = '';
  let err = '';
  child.stderr.on('data', (d: Buffer) => (err = (err + d.toString()).slice(-2000)));
  return new Promise((resolve, reject) => {
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /^ready (\S+)/m.exec(out);
      if (m) resolve({ child, url: m[1] });
    });
    child.on('exit', (code) => reject(new Error(`${args[0]} exited ${code} before ready: ${err}`)));
  });
}

type Msg = Record<string, unknown>;

t.test('serve streams what a separate record process appends from the sim', async (t) => {
  const dir = tempDir(t);
  const cfg = join(dir, 'sim-config.json');
  await startCli(t, ['sim', '--config-out', cfg, '--seed', '7', '--window-scale', '0.1', '--rate', '150', '--faults', 'drop=1500ms']);
  await startCli(t, ['record', '--config', cfg, '--data-dir', dir, '--kinds', 'clob,catalog']);
  const serve = await startCli(t, ['serve', '--data-dir', dir, '--port', '0']);
  const { key } = await createKey(dir, 'free', 'e2e');
  const wsUrl = `${serve.url.replace(/^http/, 'ws')}/v3/stream`;
  const rest = async (path: string): Promise<{ data: Msg[]; next_cursor: string | null }> => {
    const res = await fetch(`${serve.url}${path}`, { headers: { authorization: `Bearer ${key}` } });
    return (await res.json()) as { data: Msg[]; next_cursor: string | null };
  };

  // Every btc market the recorder is writing books for (markets open and close all the time in
  // the sim, so the test follows all of them rather than betting on one).
  let ids: string[] = [];
  for (let i = 0; i < 100 && ids.length === 0; i++) {
    const withBooks = new Set(await listMarkets(dir, 'coin', 'books'));
    ids = ((await rest('/v3/btc/markets?limit=100')).data ?? [])
      .filter((m) => (m.status === 'open' || m.status === 'upcoming') && withBooks.has(m.market_id as string))
      .map((m) => m.market_id as string);
    if (ids.length === 0) await sleep(200);
  }
  if (ids.length === 0) throw new Error('no btc market with books');
  const sub = (id: string, n: number): Msg => ({ op: 'subscribe', id: n, channel: 'book', family: 'coin', coin: 'btc', market_id: id });

  const c = await TestClient.connect(t, wsUrl, key);
  ids.forEach((id, n) => c.send(sub(id, n)));
  // Long enough to cross at least one forced drop of the upstream connection and its recovery.
  const gap = await c.waitFor((m) => m.type === 'gap' && m.end === undefined && m.reason !== 'not_recording', 20_000);
  await c.waitFor(
    (m, i = c.msgs.indexOf(m)) => m.type === 'book' && (m.data as Msg).market_id === gap.market_id && i > c.msgs.indexOf(gap),
    20_000,
  );
  c.ws.close();
  await c.closed;
  const of = (msgs: Msg[], id: string): Msg[] => msgs.filter((m) => m.market_id === id || (m.data as Msg | undefined)?.market_id === id);
  for (const id of ids) {
    const seqs = of(c.msgs, id).map((m) => m.seq as number);
    t.ok(
      seqs.every((s, i) => i === 0 || s > seqs[i - 1]),
      `${id}: seq strictly increasing over books and gaps`,
    );
  }
  t.match(gap, { family: 'coin', reason: /disconnected|stale|sequence_gap|upstream_error/, start: /Z$/, seq: Number });

  // Resume on the market with the newest book: it is the most likely to still be recorded.
  const lastBook = c.msgs.filter((m) => m.type === 'book').at(-1)!;
  const id = (lastBook.data as Msg).market_id as string;
  const mine = of(c.msgs, id);
  const lastSeen = mine[mine.length - 1].seq as number;
  const books = mine.filter((m) => m.type === 'book');
  await sleep(800); // the recorder keeps appending while nobody listens

  const again = await TestClient.connect(t, wsUrl, key);
  again.send({ ...sub(id, 1), after_seq: lastSeen });
  await sleep(1500);
  const resumed = again.msgs.filter((m) => m.type === 'book');
  const upTo = Math.max(lastSeen, ...resumed.map((m) => m.seq as number));

  // REST, same market: every book message equals the snapshot with its seq, and the resumed
  // stream holds exactly the snapshots after lastSeen, once each.
  const restBooks: Msg[] = [];
  const since = encodeURIComponent((books[0].data as Msg).receive_time as string);
  let page = await rest(`/v3/btc/markets/${id}/snapshots?include_orderbook=true&limit=1000&start_time=${since}`);
  for (;;) {
    restBooks.push(...page.data);
    if (!page.next_cursor || (page.data.at(-1)?.seq as number) >= upTo) break;
    page = await rest(`/v3/btc/markets/${id}/snapshots?include_orderbook=true&limit=1000&start_time=${since}&cursor=${page.next_cursor}`);
  }
  const bySeq = new Map(restBooks.map((s) => [s.seq as number, s]));
  const mismatched = books.concat(resumed).filter((m) => JSON.stringify(bySeq.get(m.seq as number)) !== JSON.stringify(m.data));
  t.equal(mismatched.length, 0, `book messages equal REST snapshots (${books.length + resumed.length} compared)`);
  const expected = restBooks.map((s) => s.seq as number).filter((s) => s > lastSeen && s <= upTo);
  t.same(
    resumed.map((m) => m.seq),
    expected,
    `resume gives exactly the missed snapshots, once (${expected.length})`,
  );
  const expectedFirst = restBooks.map((s) => s.seq as number).filter((s) => s >= (books[0].seq as number) && s <= lastSeen);
  t.same(
    books.map((m) => m.seq),
    expectedFirst,
    'the first connection got every snapshot while connected',
  );
});
