// `pmtape import`: the real 51-message clob burst and catalogue entries through the normalizers into
// the logs — de-duplicated on re-import, provenance kept, older-than-tail records refused with an
// explanation, bad lines reported — in-process and through the real CLI.

import t from 'tap';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execFileSync, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { runImport } from '../../src/recorders/import-run.js';
import { MarketBooks } from '../../src/book/book-state.js';
import { normalizeClob } from '../../src/recorders/clob/normalize.js';
import type { BookSnapshot } from '../../src/schema/observation.js';
import { readLog, tempDir } from './helpers.js';

const fixture = (p: string): string => fileURLToPath(new URL(`../../../test/fixtures/${p}`, import.meta.url));
const CLI = fileURLToPath(new URL('../../cli.js', import.meta.url));
const BURST = fixture('clob/ws_market_price_change_crossing_burst.json');
const burst = JSON.parse(readFileSync(BURST, 'utf8')) as Array<Record<string, unknown>>;
const COND = String(burst[0].market);
const UP = String(burst[0].asset_id);
const DOWN = String((burst[1].price_changes as Array<{ asset_id: string }>)[1].asset_id);

/** The real catalogue market, re-pointed at the burst's condition and tokens (a test input of ours). */
function catalogLine(dir: string, recvTs: number, extra: Record<string, unknown> = {}): string {
  const real = JSON.parse(readFileSync(fixture('catalog/gamma_market.json'), 'utf8'));
  const m = {
    ...real,
    id: '424242',
    conditionId: COND,
    clobTokenIds: JSON.stringify([UP, DOWN]),
    slug: 'btc-updown-5m-1790658600',
    eventStartTime: '2026-09-29T05:10:00Z',
    endDate: '2026-09-29T05:15:00Z',
    ...extra,
  };
  const file = join(dir, `catalog-${recvTs}.jsonl`);
  writeFileSync(file, `${JSON.stringify({ recv_ts: recvTs, msg: m })}\n`);
  return file;
}

t.test('the real burst imports with provenance and rebuilds the final real book; re-import changes nothing', async (t) => {
  const dir = tempDir();
  const cat = await runImport(dir, 'catalog', [catalogLine(dir, 1790658600000)]);
  t.match(cat, { written: 1, duplicates: 0 });
  const s1 = await runImport(dir, 'clob', [BURST]);
  t.match(s1, { messages: 51, written: 100, duplicates: 0, too_old: 0 });
  const recs = await readLog(dir, 'coin', 'books', '424242');
  t.equal(recs.length, 100);
  t.ok(
    recs.every((r) => r.origin === 'import' && typeof r.import_id === 'string'),
    'provenance on every record',
  );
  t.equal(recs[0].recv_ts, 1790658661234, 'a bare message gets its source time as receive time');
  t.equal(new Set(recs.map((r) => r.import_id)).size, 100, 'ids are unique');
  const books = new MarketBooks();
  for (const r of recs) books.apply(r);
  const final = normalizeClob(burst[50], 0)[0] as BookSnapshot;
  t.same(books.view(UP)?.bids, final.bids);
  t.same(books.view(UP)?.asks, final.asks);

  const s2 = await runImport(dir, 'clob', [BURST]);
  t.match(s2, { written: 0, duplicates: 100 });
  t.equal((await readLog(dir, 'coin', 'books', '424242')).length, 100, 're-import appended nothing');
  const cat2 = await runImport(dir, 'catalog', [catalogLine(dir, 1790658600000)]);
  t.match(cat2, { written: 0 });
});

t.test('imported book logs get checkpoints of the state the imported records build', async (t) => {
  const dir = tempDir();
  await runImport(dir, 'catalog', [catalogLine(dir, 1790658600000)]);
  const s = await runImport(dir, 'clob', [BURST], { checkpointEveryDeltas: 20 });
  const recs = await readLog(dir, 'coin', 'books', '424242');
  const cps = recs.filter((r) => r.type === 'book_checkpoint');
  t.equal(s.written, 100 + cps.length);
  t.equal(cps.length, 4, 'one per 20 deltas, only while a book is valid');
  // A checkpoint equals the book rebuilt from the records before it.
  const books = new MarketBooks();
  for (const r of recs) {
    if (r.type === 'book_checkpoint') {
      t.same(
        r.books,
        books.checkpointBooks().map((v) => ({ token_id: v.token_id, bids: [...v.bids], asks: [...v.asks] })),
      );
      t.equal(r.origin, 'import');
    }
    books.apply(r);
  }
  t.match(await runImport(dir, 'clob', [BURST], { checkpointEveryDeltas: 20 }), { written: 0 }, 're-import adds no checkpoint either');
});

t.test('records older than a log tail are refused with an explanation; bad lines are reported', async (t) => {
  const dir = tempDir();
  await runImport(dir, 'catalog', [catalogLine(dir, 1790658600000)]);
  await runImport(dir, 'clob', [BURST]);
  const old = join(dir, 'old.jsonl');
  const lines = [
    JSON.stringify({ recv_ts: 1790658000000, msg: burst[0] }),
    'this is not json',
    JSON.stringify({
      recv_ts: 1790659000000,
      msg: { event_type: 'book', asset_id: 'not-a-known-token', bids: [], asks: [], timestamp: '1' },
    }),
    JSON.stringify({
      recv_ts: 1790659000001,
      msg: [{ event_type: 'book', asset_id: UP, market: COND, bids: [{ price: '.3', size: '10' }], asks: [], timestamp: '1790658999000' }],
    }),
  ];
  writeFileSync(old, lines.join('\n'));
  const s = await runImport(dir, 'clob', [old]);
  t.equal(s.too_old, 1);
  t.equal(s.written, 1, 'the newer book is appended');
  t.match(s.problems.join('\n'), /old\.jsonl:2: not JSON/);
  t.match(s.problems.join('\n'), /append-only in receive time/);
  t.ok(
    Object.keys(s.skipped).some((k) => /catalogue first/.test(k)),
    'unknown tokens are skipped with a reason',
  );
  const recs = await readLog(dir, 'coin', 'books', '424242');
  t.match(recs[recs.length - 1], { type: 'book', bids: [['.3', '10']], recv_ts: 1790659000001 });
});

t.test('the import command prints a JSON summary and names a bad kind', async (t) => {
  const dir = tempDir();
  const cat = catalogLine(dir, 1790658600000);
  const out = execFileSync(process.execPath, [CLI, 'import', '--kind', 'catalog', '--data-dir', dir, cat], { encoding: 'utf8' });
  t.match(JSON.parse(out.trim().split('\n').pop()!), { written: 1 });
  const out2 = execFileSync(process.execPath, [CLI, 'import', '--kind', 'clob', '--data-dir', dir, BURST], { encoding: 'utf8' });
  t.match(JSON.parse(out2.trim().split('\n').pop()!), { written: 100 });
  const bad = spawnSync(process.execPath, [CLI, 'import', '--kind', 'nope', '--data-dir', dir, BURST], { encoding: 'utf8' });
  t.equal(bad.status, 1);
  t.match(bad.stderr, /--kind must be one of .*clob.*catalog/);
});
