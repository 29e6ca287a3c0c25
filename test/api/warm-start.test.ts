// A started server has already done what every first request used to pay for (server.ts
// `warmReadSide`): the catalogue view of every family is built and the Parquet read path has run
// once, before `listen` (`serve`) or in the background once listening (`start`, whose recorders
// must not wait). A part file that cannot be read does not stop the start: it is logged, and the
// server answers.

import t from 'tap';
import { readdir, truncate } from 'node:fs/promises';
import { join } from 'node:path';
import type { FastifyBaseLogger } from 'fastify';
import { pino } from 'pino';
import { startApi } from '../../src/api/server.js';
import { createKey } from '../../src/api/plugins/keys.js';
import { DAY_MS, utcDay } from '../../src/schema/time.js';
import { compactDay, partitionDir, parquetStore, deleteExpiredLogs } from '../../src/storage/testing.js';
import { writeFixture } from '../../tools/fixtures/compaction-logs.js';
import { testConfig, tmpDataDir } from './helpers.js';

/** A logger at info that keeps its JSON lines. */
function capture(): { logger: FastifyBaseLogger; lines: () => Record<string, unknown>[] } {
  const out: string[] = [];
  const logger: FastifyBaseLogger = pino({ level: 'info' }, { write: (s: string) => void out.push(s) });
  return { logger, lines: () => out.map((l) => JSON.parse(l) as Record<string, unknown>) };
}

const day = utcDay(Date.now() - 2 * DAY_MS);

t.test('the markets index and the Parquet reader are warm when the server listens', async (t) => {
  const dir = tmpDataDir(t);
  await writeFixture(dir, { days: [day], booksPerDay: 200, coinMarkets: 2, spanMs: 600_000 });
  await compactDay(dir, day);
  await deleteExpiredLogs(dir, Date.now(), 0); // the day is served from Parquet only
  const key = (await createKey(dir, 'paid', 'warm')).key;
  const log = capture();
  const api = await startApi(testConfig(dir, { port: 0 }), { logger: log.logger });
  t.teardown(() => api.close());
  t.ok(api.app.pmtape.markets.resolveNow('coin', '50001'), 'the coin catalogue answers with no request made');
  const warmed = log.lines().find((l) => l.msg === 'read side warmed');
  t.ok(warmed, 'the warm-up is logged');
  t.ok(Number(warmed?.markets) >= 2, `with the markets it indexed (${String(warmed?.markets)})`);
  t.match(warmed?.parquet, { loaded: true, decoded: { date: day } }, 'and the chunk it decoded');
  // `serve` also replays an hour of that market through the replay's code, in private stores.
  const replay = warmed?.replay as { rounds: number; lines: number } | undefined;
  t.ok(replay && replay.rounds >= 1, `the replay warm-up ran (${JSON.stringify(replay)})`);
  t.ok(replay && replay.lines > 0, 'and made lines');
  // And the dataset rows' read (GET /v3/datasets/rows) of that hour, also in private stores.
  const rows = warmed?.rows as { rounds: number; bytes: number } | undefined;
  t.ok(rows && rows.rounds >= 1 && rows.bytes > 1000, `the dataset rows warm-up ran and read rows (${JSON.stringify(rows)})`);
  // The warm-up read that market's first hour through private stores: a request for that very hour
  // decodes it again in the process-wide store (a hit would mean the warm-up kept data).
  const { market, from } = (warmed?.parquet as { decoded: { market: string; from: number } }).decoded;
  const store = parquetStore(dir);
  const before = store.decodes;
  const res = await fetch(
    `${api.url}/v3/replay?family=coin&market_id=${market}&start_time=${from}&end_time=${from + 3_600_000}&types=book_change`,
    { headers: { authorization: `Bearer ${key}` } },
  );
  const lines = (await res.text()).trim().split('\n');
  t.equal(res.status, 200);
  t.ok(
    lines.length > 1 && JSON.parse(lines.at(-1)!).type === 'end',
    `the replay answers (${lines.length} lines; last: ${lines.at(-1)?.slice(0, 400)})`,
  );
  t.ok(store.decodes > before, `by decoding its chunks itself (${store.decodes - before}): nothing the warm-up read was kept`);
});

t.test('an unreadable part file is logged and the server starts', async (t) => {
  const dir = tmpDataDir(t);
  await writeFixture(dir, { days: [day], booksPerDay: 200, coinMarkets: 2, spanMs: 600_000 });
  await compactDay(dir, day);
  // Every books part file of the day cut to a few bytes: no footer to read.
  for (const family of ['coin', 'wallet-prediction', 'yesno-exchange'] as const) {
    const pdir = partitionDir(dir, family, 'book_changes', day);
    for (const f of await readdir(pdir).catch(() => [] as string[])) if (f.endsWith('.parquet')) await truncate(join(pdir, f), 10);
  }
  const log = capture();
  const api = await startApi(testConfig(dir, { port: 0 }), { logger: log.logger });
  t.teardown(() => api.close());
  const warn = log.lines().find((l) => l.msg === 'could not warm the Parquet reader at start');
  t.ok(warn, 'the failure is logged');
  t.equal(warn?.level, 40, 'as a warning');
  const res = await fetch(`${api.url}/healthz`);
  t.equal(res.status, 200, 'and the server answers');
  t.ok(api.app.pmtape.markets.resolveNow('coin', '50001'), 'with its catalogue view built all the same');
});

t.test('`start` warms in the background: the server listens at once and the warm-up follows', async (t) => {
  const dir = tmpDataDir(t);
  await writeFixture(dir, { days: [day], booksPerDay: 200, coinMarkets: 2, spanMs: 600_000 });
  await compactDay(dir, day);
  const log = capture();
  const api = await startApi(testConfig(dir, { port: 0 }), { logger: log.logger, warmUp: 'background' });
  t.teardown(() => api.close());
  t.equal((await fetch(`${api.url}/healthz`)).status, 200, 'listening');
  let warmed: Record<string, unknown> | undefined;
  for (let i = 0; i < 2000 && !(warmed = log.lines().find((l) => l.msg === 'read side warmed')); i++)
    await new Promise((r) => setTimeout(r, 5));
  t.match(warmed?.parquet, { loaded: true, decoded: { date: day } }, 'the warm-up ran and is logged');
  t.equal(warmed?.replay, undefined, 'without the replay rounds (they would take a core from the recorders)');
  t.equal(warmed?.rows, undefined, 'nor the dataset rows rounds');
  t.ok(api.app.pmtape.markets.resolveNow('coin', '50001'), 'and built the catalogue view');
});
