// `pmtape import` against bad input and a refusing storage: receive times over a day ahead are
// refused and counted (they would block the log), only acknowledged writes count as written, a
// truncated JSON array imports what is complete and says where it was cut, a held lock fails the
// import naming the log, and the CLI exits 1 whenever nothing was written or storage refused.

import t from 'tap';
import { closeSync, existsSync, openSync, readFileSync, readdirSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { runImport } from '../../src/recorders/import-run.js';
import { openWriter } from '../../src/storage/index.js';
import { readLog, tempDir } from './helpers.js';

const fixture = (p: string): string => fileURLToPath(new URL(`../../../test/fixtures/${p}`, import.meta.url));
const CLI = fileURLToPath(new URL('../../cli.js', import.meta.url));
const BURST = fixture('clob/ws_market_price_change_crossing_burst.json');
const burst = JSON.parse(readFileSync(BURST, 'utf8')) as Array<Record<string, unknown>>;
const COND = String(burst[0].market);
const UP = String(burst[0].asset_id);
const DOWN = String((burst[1].price_changes as Array<{ asset_id: string }>)[1].asset_id);
const T0 = 1790658600000;
t.setTimeout(600_000);
const NOW = () => T0 + 3_600_000; // the injected wall clock: an hour after the market opened

/** The real catalogue market re-pointed at the burst's tokens, imported so the clob lines map. */
async function withCatalog(dir: string): Promise<void> {
  const real = JSON.parse(readFileSync(fixture('catalog/gamma_market.json'), 'utf8'));
  const m = {
    ...real,
    id: '424242',
    conditionId: COND,
    clobTokenIds: JSON.stringify([UP, DOWN]),
    slug: 'btc-updown-5m-1790658600',
    eventStartTime: '2026-09-29T05:10:00Z',
    endDate: '2026-09-29T05:15:00Z',
  };
  const file = join(dir, 'catalog.jsonl');
  writeFileSync(file, `${JSON.stringify({ recv_ts: T0, msg: m })}\n`);
  t.match(await runImport(dir, 'catalog', [file], { now: NOW }), { written: 1 });
}

const book = (recvTs: number, price: string, timestamp = String(recvTs - 5)): string =>
  JSON.stringify({
    recv_ts: recvTs,
    msg: [{ event_type: 'book', asset_id: UP, market: COND, bids: [{ price, size: '10' }], asks: [], timestamp }],
  });

const cli = (args: string[], node: string[] = []) =>
  spawnSync(process.execPath, [...node, CLI, 'import', ...args], {
    encoding: 'utf8',
    env: { ...process.env, PMTAPE_LOG_LEVEL: 'warn' },
    timeout: 280_000,
  });
const summary = (stdout: string) => JSON.parse(stdout.trim().split('\n').pop()!) as Record<string, unknown>;

t.test('a receive time over a day ahead is refused and counted; later imports of the market still land', async (t) => {
  const dir = tempDir();
  await withCatalog(dir);
  const f = join(dir, 'future.jsonl');
  writeFileSync(
    f,
    [book(T0 + 1000, '.3'), book(Date.UTC(2100, 0, 1), '.4'), book(NOW() + 86_400_000 + 1, '.45'), book(NOW() + 3_600_000, '.5')].join(
      '\n',
    ),
  );
  const s = await runImport(dir, 'clob', [f], { now: NOW });
  t.equal(s.future, 2, 'both times beyond a day ahead are counted');
  t.equal(s.written, 2, 'the rest lands (an hour ahead is within the slack)');
  t.match(
    s.problems.join('\n'),
    /2 message\(s\) have a receive time more than a day ahead of this machine's clock \(first: .*future\.jsonl:2 at 2100-01-01T00:00:00\.000Z\).*Fix the capture's recv_ts/,
  );
  const files = readdirSync(join(dir, 'logs'), { recursive: true }).map(String);
  t.notOk(
    files.some((p) => p.includes('2100-')),
    'no 2100 day file',
  );
  const next = join(dir, 'next.jsonl');
  writeFileSync(next, book(NOW() + 3_600_001, '.6'));
  t.match(await runImport(dir, 'clob', [next], { now: NOW }), { written: 1, too_old: 0 }, 'the log is not blocked');
});

t.test('a line storage refuses is not counted as written; it is counted as failed and named', async (t) => {
  const dir = tempDir();
  await withCatalog(dir);
  const f = join(dir, 'refused.jsonl');
  // A source time that is a safe integer of ms but not of µs: the log's frame refuses it.
  writeFileSync(f, [book(T0 + 1000, '.3'), book(T0 + 2000, '.4', '99999999999999')].join('\n'));
  const s = await runImport(dir, 'clob', [f], { now: NOW });
  t.equal(s.written, 1, 'only the acknowledged record');
  t.equal(s.failed, 1);
  t.match(s.problems.join('\n'), /coin\/books\/424242: storage refused record\(s\): .*source_ts/);
  t.equal((await readLog(dir, 'coin', 'books', '424242')).length, 1);
  const r = cli(['--kind', 'clob', '--data-dir', dir, f]);
  t.equal(r.status, 1, 'the CLI exits 1');
  t.match(r.stderr, /storage refused 1 record\(s\)/);
  t.match(summary(r.stdout), { written: 0, duplicates: 1, failed: 1 });
});

t.test('a truncated JSON array imports its complete messages and says where it was cut', async (t) => {
  const dir = tempDir();
  await withCatalog(dir);
  const text = readFileSync(BURST, 'utf8');
  const cut = join(dir, 'cut.json');
  // Cut inside the 31st message: 30 are complete.
  let at = 0;
  for (let i = 0; i < 31; i++) at = text.indexOf('"market"', at + 1);
  writeFileSync(cut, text.slice(0, at + 40));
  const s = await runImport(dir, 'clob', [cut], { now: NOW });
  t.equal(s.messages, 30);
  t.ok(s.written > 0, `the complete messages land (${s.written})`);
  t.match(s.problems.join('\n'), /cut\.json:31: the JSON array is cut off after 30 complete message\(s\) \(a truncated file\?\)/);
  const empty = join(dir, 'empty-cut.json');
  writeFileSync(empty, '[{"recv_ts": 1790658601000, "msg": {"event_');
  const r = cli(['--kind', 'clob', '--data-dir', dir, empty]);
  t.equal(r.status, 1, 'nothing complete: exit 1');
  t.match(r.stderr, /the JSON array is cut off after 0 complete message/);
  t.match(r.stderr, /nothing was written: no message could be read/);
});

t.test('a held lock fails the import naming the log; the CLI exits 1', async (t) => {
  const dir = tempDir();
  await withCatalog(dir);
  const f = join(dir, 'b.jsonl');
  writeFileSync(f, [book(T0 + 1000, '.3'), book(T0 + 2000, '.4')].join('\n'));
  const held = await openWriter(dir, { family: 'coin', stream: 'books', market: '424242' });
  t.teardown(() => held.close());
  const s = await runImport(dir, 'clob', [f], { now: NOW });
  t.match(s, { written: 0, failed: 2 });
  t.match(s.problems.join('\n'), /coin\/books\/424242: cannot open its log \(.*locked.*\); is another pmtape process writing it\?/);
  const r = cli(['--kind', 'clob', '--data-dir', dir, f]);
  t.equal(r.status, 1);
  t.match(r.stderr, /cannot open its log/);
  t.match(r.stderr, /storage refused 2 record/);
});

t.test('the CLI exits 1 saying why when nothing was written, 0 when everything was already there', async (t) => {
  const dir = tempDir();
  await withCatalog(dir);
  const future = join(dir, 'f.jsonl');
  writeFileSync(future, book(Date.UTC(2100, 0, 1), '.4'));
  const r = cli(['--kind', 'clob', '--data-dir', dir, future]);
  t.equal(r.status, 1);
  t.match(r.stderr, /nothing was written: 1 message\(s\) are timed more than a day ahead/);
  t.match(summary(r.stdout), { written: 0, future: 1 });
  t.notOk(
    existsSync(join(dir, 'logs', 'coin', 'books')) &&
      readdirSync(join(dir, 'logs', 'coin', 'books'), { recursive: true }).some((p) => String(p).includes('2100')),
  );
  const ok = join(dir, 'ok.jsonl');
  writeFileSync(ok, book(T0 + 1000, '.3'));
  t.equal(cli(['--kind', 'clob', '--data-dir', dir, ok]).status, 0, 'written: exit 0');
  const again = cli(['--kind', 'clob', '--data-dir', dir, ok]);
  t.equal(again.status, 0, 'a re-import that finds it all there: exit 0');
  t.match(summary(again.stdout), { written: 0, duplicates: 1 });
});

t.test('a 60 MB capture imports in a 96 MB heap: the input is streamed, never held (holding it took 160 MB)', async (t) => {
  const dir = tempDir();
  await withCatalog(dir);
  const file = join(dir, 'big.jsonl');
  const levels = (base: number) => Array.from({ length: 30 }, (_, i) => ({ price: (base + i / 1000).toFixed(3), size: String(10 + i) }));
  const fd = openSync(file, 'w');
  let n = 0;
  for (let bytes = 0; bytes < 60e6; n++) {
    const line = `${JSON.stringify({ recv_ts: T0 + 1000 + n, msg: [{ event_type: 'book', asset_id: n % 2 ? UP : DOWN, market: COND, bids: levels(0.1), asks: levels(0.6), timestamp: String(T0 + n) }] })}\n`;
    writeSync(fd, line);
    bytes += line.length;
  }
  closeSync(fd);
  const r = cli(['--kind', 'clob', '--data-dir', dir, file], ['--max-old-space-size=96']);
  t.equal(r.status, 0, `the import finished (${r.stderr.slice(-300)})`);
  t.match(summary(r.stdout), { messages: n, written: n, failed: 0, too_old: 0 });
});
