import t from 'tap';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runImport } from '../../../src/recorders/import-run.js';
import { openReader } from '../../../src/storage/index.js';
import { walletKey } from '../../../src/recorders/wallet/feed.js';
import type { Recorded } from '../../../src/schema/observation.js';

const FIX = fileURLToPath(new URL('../../../../test/fixtures/wallet/', import.meta.url));
const load = (f: string): unknown => JSON.parse(readFileSync(FIX + f, 'utf8'));

async function readAll(dataDir: string, key: Parameters<typeof openReader>[1]): Promise<Recorded[]> {
  const out: Recorded[] = [];
  for await (const it of openReader(dataDir, key).read('start')) out.push(it.rec);
  return out;
}

t.test('wallet import: catalogue first, then bare pushes by their own time; older versions and acks dropped', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'pmtape-w-import-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const catalogue = join(dir, 'catalogue.jsonl');
  writeFileSync(
    catalogue,
    JSON.stringify({ recv_ts: 1785067200000, msg: { topic: load('topic.json'), market: load('market.json') } }) + '\n',
  );
  // captured with receive times in arrival order: version 102 arrived after 103, and 103 twice
  const lines = readFileSync(FIX + 'ws-frames.jsonl', 'utf8')
    .trim()
    .split('\n');
  const frames = join(dir, 'frames.jsonl');
  writeFileSync(
    frames,
    lines.map((l, i) => JSON.stringify({ recv_ts: 1785067205000 + i * 200, msg: JSON.parse(l) })).join('\n') +
      '\n' +
      JSON.stringify({ recv_ts: 1785067207600, msg: load('stats.json') }) +
      '\n',
  );
  const data = join(dir, 'data');
  const s1 = await runImport(data, 'wallet', [catalogue, frames]);
  const books = await readAll(data, walletKey('4821', 'books'));
  t.same(
    books.map((b) => b.type === 'book' && b.version),
    [101, 103, 104],
    'late 102 and the repeated 103 are dropped',
  );
  t.ok(books.every((b) => b.origin === 'import'));
  t.equal(s1.skipped['older or repeated book version'], 2);
  const cat = await readAll(data, walletKey('4821', 'catalog'));
  t.equal(cat.length, 1);
  const metrics = await readAll(data, walletKey('4821', 'metrics'));
  t.equal(metrics.length, 6, 'three series per outcome');
  const s2 = await runImport(data, 'wallet', [catalogue, frames]);
  t.equal(s2.written, 0, 're-importing changes nothing');
  t.equal((await readAll(data, walletKey('4821', 'books'))).length, 3);
});

t.test('wallet pushes of a market with no known catalogue are skipped with a reason, not guessed', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'pmtape-w-import-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const frames = join(dir, 'frames.jsonl');
  writeFileSync(frames, readFileSync(FIX + 'ws-frames.jsonl', 'utf8'));
  const s = await runImport(join(dir, 'data'), 'wallet', [frames]);
  t.equal(s.written, 0);
  t.ok(s.skipped['book of no known market (import or record its catalogue first)'] >= 4);
});

t.test('bare wallet pushes take their update time as receive time, which also restores their order', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'pmtape-w-import-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const catalogue = join(dir, 'catalogue.jsonl');
  writeFileSync(
    catalogue,
    JSON.stringify({ recv_ts: 1785067200000, msg: { topic: load('topic.json'), market: load('market.json') } }) + '\n',
  );
  const frames = join(dir, 'frames.jsonl');
  writeFileSync(frames, readFileSync(FIX + 'ws-frames.jsonl', 'utf8'));
  const data = join(dir, 'data');
  const s = await runImport(data, 'wallet', [catalogue, frames]);
  const books = await readAll(data, walletKey('4821', 'books'));
  t.same(
    books.map((b) => b.type === 'book' && b.version),
    [101, 102, 103, 104],
  );
  t.same(
    books.map((b) => b.recv_ts),
    [1785067205120, 1785067205610, 1785067205980, 1785067206400],
  );
  t.equal(s.skipped['older or repeated book version'], 1, 'the repeated 103');
  t.equal(s.skipped['no receive or source time'], 3, 'replies and the heartbeat carry no time: nothing to store anyway');
});
