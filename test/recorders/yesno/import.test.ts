import t from 'tap';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { openReader } from '../../../src/storage/index.js';
import { runImport } from '../../../src/recorders/import-run.js';
import { yesnoBooksKey, yesnoCatalogKey } from '../../../src/recorders/yesno/feed.js';
import type { Recorded } from '../../../src/schema/observation.js';

const run = promisify(execFile);
const FIX = fileURLToPath(new URL('../../../../test/fixtures/yesno/', import.meta.url));
const CLI = fileURLToPath(new URL('../../../cli.js', import.meta.url));

async function readAll(dataDir: string, key: Parameters<typeof openReader>[1]): Promise<Recorded[]> {
  const out: Recorded[] = [];
  for await (const it of openReader(dataDir, key).read('start')) out.push(it.rec);
  return out;
}

t.test('pmtape import --kind yesno stores the real captures, keyed by the line ticker, and re-import changes nothing', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'pmtape-yn-import-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const book = JSON.parse(readFileSync(FIX + 'orderbook_KXELONMARS-99.json', 'utf8'));
  const market = JSON.parse(readFileSync(FIX + 'market_KXELONMARS-99.json', 'utf8'));
  const file = join(dir, 'capture.jsonl');
  writeFileSync(
    file,
    [
      JSON.stringify({ recv_ts: 1_780_000_000_000, msg: market }),
      JSON.stringify({ recv_ts: 1_780_000_001_000, ticker: 'KXELONMARS-99', msg: book }),
      JSON.stringify({ recv_ts: 1_780_000_002_000, msg: book }), // no ticker: cannot be placed
      JSON.stringify({ recv_ts: 1_780_000_003_000, ticker: 'KXELONMARS-99', msg: { orderbook: { yes: [[8, 444]], no: [[88, 1967]] } } }),
      JSON.stringify({ recv_ts: 1_780_000_004_000, msg: { market: { ...market.market, status: 'closed' } } }),
      JSON.stringify({ recv_ts: 1_780_000_005_000, ticker: 'KXELONMARS-99', msg: { orderbook_fp: { yes_dollars: 'garbage' } } }),
      '{"truncated',
    ].join('\n'),
  );
  const data = join(dir, 'data');
  const first = JSON.parse(
    (await run(process.execPath, [CLI, 'import', '--kind', 'yesno', '--data-dir', data, file])).stdout.trim().split('\n').at(-1)!,
  );
  t.equal(first.written, 4, 'two books and two catalogue events');
  t.equal(first.skipped['order book line without "ticker" beside "msg"'], 1);
  t.ok(Object.keys(first.skipped).some((k) => k.startsWith('malformed order book')));
  t.equal(first.problems.length, 1, 'the truncated line is reported');
  const books = await readAll(data, yesnoBooksKey('KXELONMARS-99'));
  t.same(
    books.map((b) => b.type === 'yesno_book' && b.units),
    ['dollars', 'cents'],
  );
  const b0 = books[0];
  if (b0.type === 'yesno_book') {
    t.same(b0.yes[0], ['0.0800', '444.32']);
    t.equal(b0.origin, 'import');
    t.ok(b0.import_id);
  }
  const cat = await readAll(data, yesnoCatalogKey('KXELONMARS-99'));
  t.same(
    cat.map((c) => c.type === 'catalog' && c.event),
    ['listed', 'status'],
  );
  const again = await runImport(data, 'yesno', [file]); // in-process this time: one CLI spawn is enough
  t.equal(again.written, 0, 're-importing writes nothing');
  t.equal((await readAll(data, yesnoBooksKey('KXELONMARS-99'))).length, 2);
  const asOf = await openReader(data, yesnoBooksKey('KXELONMARS-99')).checkpointAtOrBefore(1_780_000_003_500);
  t.equal(asOf?.rec.recv_ts, 1_780_000_003_000, 'imported books are checkpoints (as-of reads start there)');
});
