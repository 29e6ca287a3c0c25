// Cursors: following next_cursor while a writer appends yields exactly the snapshots of a direct
// scan (no duplicate, no skip); desc walks mirror asc; tampered, truncated and foreign cursors
// are invalid_cursor; only `limit` may change between pages.

import t from 'tap';
import { MarketBooks } from '../../src/book/book-state.js';
import { openReader, openWriter } from '../../src/storage/index.js';
import type { Observation } from '../../src/schema/observation.js';
import { bookRecords, catalog, coinMarket, keysFor, T0, testApp, testConfig, tmpDataDir, writeLog } from './helpers.js';

/** Seqs of every record that produces a coin snapshot, by an independent replay of the whole log. */
async function directScan(dir: string): Promise<number[]> {
  const books = new MarketBooks();
  const out: number[] = [];
  for await (const { rec } of openReader(dir, { family: 'coin', stream: 'books', market: coinMarket.market_id }).read('start')) {
    const changed = books.apply(rec);
    if ((rec.type === 'book' || rec.type === 'book_delta') && changed.length > 0) out.push(rec.seq);
  }
  return out;
}

t.test('a cursor walk during concurrent appends equals a direct scan', async (t) => {
  const dir = tmpDataDir(t);
  await writeLog(dir, 'coin', 'catalog', coinMarket.market_id, [catalog(coinMarket, T0 - 1000)]);
  const all = bookRecords(['1111', '2222'], {
    start: T0,
    n: 1500,
    stepMs: 50,
    cpEvery: 40,
    gapAt: T0 + 20_000,
    gapMs: 3000,
    trades: true,
    seed: 3,
  });
  const head = all.slice(0, 300);
  const tail = all.slice(300);
  await writeLog(dir, 'coin', 'books', coinMarket.market_id, head);
  const keys = await keysFor(dir);
  const app = await testApp(t, testConfig(dir));
  const get = async (url: string): Promise<any> => (await app.inject({ url, headers: { authorization: `Bearer ${keys.free}` } })).json();

  // The writer appends the rest in small acknowledged batches while pages are read.
  const w = await openWriter(dir, { family: 'coin', stream: 'books', market: coinMarket.market_id }, { fsyncIntervalMs: 1 });
  let writing = true;
  const writer = (async () => {
    for (let i = 0; i < tail.length; i += 10) {
      await Promise.all(
        tail.slice(i, i + 10).map((r: Observation) => w.append(r, r.type === 'book_checkpoint' ? { checkpoint: true } : undefined)),
      );
      await new Promise((r) => setTimeout(r, 25));
    }
    await w.close();
    writing = false;
  })();

  const seen: number[] = [];
  let newestTime = T0;
  let base = '';
  let cursor: string | null = null;
  let requery = false;
  let pages = 0;
  let caughtUp = 0;
  let pagesDuringWrites = 0;
  for (;;) {
    const writerWasRunning = writing;
    if (writing) pagesDuringWrites++;
    const limit = pages % 2 ? 13 : 7; // only limit may change between pages
    const page: any = await get(`/v3/btc/markets/540817/snapshots?limit=${limit}${base}${cursor ? `&cursor=${cursor}` : ''}`);
    t.ok(Array.isArray(page.data), `page ${pages}`);
    let seqs: number[] = page.data.map((s: any) => s.seq);
    // A new query from an inclusive start time repeats what was seen at that time: drop only that.
    if (requery) seqs = seqs.filter((q) => q > (seen[seen.length - 1] ?? -1));
    seen.push(...seqs);
    if (page.data.length) newestTime = Date.parse(page.data[page.data.length - 1].receive_time);
    pages++;
    requery = false;
    cursor = page.next_cursor;
    if (cursor !== null) continue;
    if (!writerWasRunning) break; // nothing more exists, and nothing more will come
    // Caught up with the writer: nothing more exists *now*. Start a new query at the newest time seen.
    caughtUp++;
    await new Promise((r) => setTimeout(r, 30));
    base = `&start_time=${newestTime}`;
    requery = true;
  }
  t.comment(`walked ${pages} pages (${pagesDuringWrites} while appending), caught up with the writer ${caughtUp} times`);
  t.ok(pagesDuringWrites > 5, 'pages were read while the writer appended');
  await writer;
  const want = await directScan(dir);
  t.ok(pages > 20, `walked ${pages} pages`);
  t.equal(new Set(seen).size, seen.length, 'no duplicates');
  t.same(seen, want, 'concatenated pages equal a direct scan');
});

t.test('desc pages mirror asc, and cursors refuse tampering and other queries', async (t) => {
  const dir = tmpDataDir(t);
  await writeLog(dir, 'coin', 'catalog', coinMarket.market_id, [catalog(coinMarket, T0 - 1000)]);
  await writeLog(
    dir,
    'coin',
    'books',
    coinMarket.market_id,
    bookRecords(['1111', '2222'], { start: T0, n: 300, stepMs: 100, cpEvery: 25, trades: true }),
  );
  const keys = await keysFor(dir);
  const app = await testApp(t, testConfig(dir));
  const get = async (url: string): Promise<any> => (await app.inject({ url, headers: { authorization: `Bearer ${keys.free}` } })).json();
  const walk = async (q: string): Promise<any[]> => {
    const out: any[] = [];
    let c: string | null = null;
    do {
      const p: any = await get(`/v3/btc/markets/540817/snapshots?${q}${c ? `&cursor=${c}` : ''}`);
      out.push(...p.data);
      c = p.next_cursor;
    } while (c);
    return out;
  };
  const asc = await walk('limit=17&include_orderbook=true');
  const desc = await walk('limit=23&include_orderbook=true&order=desc');
  t.equal(asc.length, (await directScan(dir)).length);
  t.same(desc, [...asc].reverse(), 'desc walk is the asc walk reversed, books included');
  const window = await walk(`limit=9&start_time=${T0 + 5000}&end_time=${T0 + 9000}`);
  t.ok(window.every((s) => Date.parse(s.receive_time) >= T0 + 5000 && Date.parse(s.receive_time) < T0 + 9000));
  t.same(
    window.map((s) => s.seq),
    asc.filter((s) => Date.parse(s.receive_time) >= T0 + 5000 && Date.parse(s.receive_time) < T0 + 9000).map((s) => s.seq),
  );
  const asOf = await get(`/v3/btc/markets/540817/snapshots?end_time=${T0 + 7000}&order=desc&limit=1`);
  t.equal(
    asOf.data[0].seq,
    window.filter((s) => Date.parse(s.receive_time) < T0 + 7000).pop().seq,
    'end_time + desc + limit=1 is the book as of T',
  );

  const first = await get('/v3/btc/markets/540817/snapshots?limit=5&include_orderbook=true');
  const c: string = first.next_cursor;
  const bad = async (url: string): Promise<void> => {
    const r = await app.inject({ url, headers: { authorization: `Bearer ${keys.free}` } });
    t.equal(r.statusCode, 400, url);
    t.equal(r.json().error.code, 'invalid_cursor', url);
  };
  await bad(`/v3/btc/markets/540817/snapshots?limit=5&include_orderbook=true&cursor=${c.slice(0, -3)}`);
  await bad(`/v3/btc/markets/540817/snapshots?limit=5&include_orderbook=true&cursor=${c.slice(0, 10)}`);
  const [body, mac] = c.split('.');
  const forged = Buffer.from(
    Buffer.from(body, 'base64url')
      .toString()
      .replace(/"after":\d+/, '"after":1'),
  ).toString('base64url');
  await bad(`/v3/btc/markets/540817/snapshots?limit=5&include_orderbook=true&cursor=${forged}.${mac}`);
  await bad(`/v3/btc/markets/540817/snapshots?limit=5&include_orderbook=false&cursor=${c}`);
  await bad(`/v3/btc/markets/540817/snapshots?limit=5&include_orderbook=true&order=desc&cursor=${c}`);
  await bad(`/v3/btc/markets/540817/snapshots?limit=5&include_orderbook=true&start_time=${T0}&cursor=${c}`);
  await bad(`/v3/btc/markets?cursor=${c}`);
  await bad(`/v3/btc/markets/540817/snapshots?cursor=%00%01`);
  const ok = await app.inject({
    url: `/v3/btc/markets/540817/snapshots?limit=50&include_orderbook=true&cursor=${c}`,
    headers: { authorization: `Bearer ${keys.free}` },
  });
  t.equal(ok.statusCode, 200, 'only limit changed: accepted');
  t.same(ok.json().data[0], asc[5]);
});
