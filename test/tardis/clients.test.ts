// The tardis-dev clients, unchanged, download a sim day's files (test/helpers/sim-day.ts: the real
// emulators and recorder, clocks shifted to yesterday, compacted) from a running `pmtape serve`
// (ephemeral port) with their datasets endpoint pointed at it and the pmtape key as their API key:
// the npm client's `downloadDatasets` (it speaks only HTTPS, so a TLS front with a throwaway
// certificate the child trusts through NODE_EXTRA_CA_CERTS sits before the server) and the Python
// client's `download_datasets` (venv `tardis` of tools/toolchains/python.ts). The books rebuilt from
// what they saved equal the API's as-of books at quiet instants, and the files are the route's bytes.

import t from 'tap';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { createServer } from 'node:tls';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { requireTool } from '../helpers/toolchains.js';
import { apiBook, dec, marketInfo, quietInstants, recordSimDay, type Levels, type SimBook, type SimDay } from '../helpers/sim-day.js';
import { pythonIn } from '../../tools/toolchains/python.js';
import { REPO } from '../selfhost/helpers.js';
import { parseCsv, readGz, rebuild, run } from './helpers.js';

const EXCHANGE = 'pmtape-clob';
const TYPES = ['incremental_book_L2', 'trades', 'book_snapshot_25', 'quotes'];
const BOOKS = 3;
const PER_BOOK = 6;

const fileOf = (dir: string, day: string, type: string, symbol: string): string => join(dir, `${EXCHANGE}_${type}_${day}_${symbol}.csv.gz`);

/** The day's busiest exported books (all four files present, enough quiet instants), with their market and outcome. */
async function pickBooks(sd: SimDay): Promise<{ symbol: string; book: SimBook; instants: number[] }[]> {
  const prefix = `${EXCHANGE}_incremental_book_L2_${sd.day}_`;
  const symbols = readdirSync(sd.out)
    .filter((f) => f.startsWith(prefix))
    .map((f) => f.slice(prefix.length, -'.csv.gz'.length))
    .filter((s) => TYPES.every((type) => existsSync(fileOf(sd.out, sd.day, type, s))))
    .sort((a, b) => statSync(fileOf(sd.out, sd.day, TYPES[0], b)).size - statSync(fileOf(sd.out, sd.day, TYPES[0], a)).size);
  const picked: { symbol: string; book: SimBook; instants: number[] }[] = [];
  for (const symbol of symbols) {
    if (picked.length === BOOKS) break;
    const file = fileOf(sd.out, sd.day, TYPES[0], symbol);
    let instants: number[];
    try {
      instants = quietInstants(file, PER_BOOK);
    } catch {
      continue; // too few quiet stretches in this book
    }
    const cut = symbol.lastIndexOf('-');
    const market = await marketInfo(sd, symbol.slice(0, cut).toLowerCase());
    const outcome = market.outcomes.find((o) => o.label.toUpperCase() === symbol.slice(cut + 1))?.label;
    if (outcome) picked.push({ symbol, book: { file, market, outcome }, instants });
  }
  if (picked.length < BOOKS) throw new Error(`only ${picked.length} exported books fit (of ${symbols.length})`);
  return picked;
}

const levels = (l: [number, number][]): Levels => l.map(([p, s]) => [dec(p), dec(s)]);

t.test('the tardis-dev clients download a sim day from serve', { timeout: 1_200_000 }, async (tt) => {
  const t = tt;
  const sd = await recordSimDay(t, 200);
  const books = await pickBooks(sd);
  // Lower-case: the clients capitalize symbols themselves.
  const symbols = books.map((b, i) => (i === 0 ? b.symbol.toLowerCase() : b.symbol));
  const [from, to] = [sd.day, new Date(Date.parse(sd.day) + 86_400_000).toISOString().slice(0, 10)];
  const routeBytes = async (type: string, sym: string): Promise<Buffer> => {
    const [y, m, d] = sd.day.split('-');
    const r = await fetch(`${sd.base}/v1/${EXCHANGE}/${type}/${y}/${m}/${d}/${sym}.csv.gz`, {
      headers: { authorization: `Bearer ${sd.key}` },
    });
    if (r.status !== 200) throw new Error(`${type} ${sym}: ${r.status}`);
    return Buffer.from(await r.arrayBuffer());
  };

  const check = async (t: typeof tt, out: string): Promise<void> => {
    const names = readdirSync(out);
    t.equal(names.length, books.length * TYPES.length, `${names.length} files saved`);
    for (const { symbol } of books) {
      for (const type of TYPES) {
        const path = fileOf(out, sd.day, type, symbol);
        t.ok(readFileSync(path).equals(await routeBytes(type, symbol)), `${path}: the route's bytes`);
      }
    }
    let compared = 0,
      levelsSeen = 0;
    for (const { symbol, book, instants } of books) {
      const csv = parseCsv(readGz(fileOf(out, sd.day, TYPES[0], symbol), gunzipSync));
      for (const T of instants) {
        const got = rebuild(csv, T);
        t.same(
          { bids: levels(got.bids), asks: levels(got.asks) },
          await apiBook(sd, book, T),
          `${symbol} at ${new Date(T / 1000).toISOString()}`,
        );
        compared++;
        levelsSeen += got.bids.length + got.asks.length;
      }
    }
    t.equal(compared, BOOKS * PER_BOOK, `${compared} books compared with the API's`);
    t.ok(levelsSeen > compared * 2, `the books compared are not empty (${levelsSeen} levels)`);
  };

  t.test('npm tardis-dev downloadDatasets', async (t) => {
    const work = mkdtempSync(join(tmpdir(), 'pmtape-tardis-npm-'));
    t.teardown(() => rmSync(work, { recursive: true, force: true }));
    await run('openssl', [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      join(work, 'key.pem'),
      '-out',
      join(work, 'cert.pem'),
      '-days',
      '1',
      '-subj',
      '/CN=localhost',
      '-addext',
      'subjectAltName=DNS:localhost,IP:127.0.0.1',
    ]);
    const port = Number(new URL(sd.base).port);
    const sockets = new Set<Socket>();
    const tls = createServer({ key: readFileSync(join(work, 'key.pem')), cert: readFileSync(join(work, 'cert.pem')) }, (s) => {
      const up = connect(port, '127.0.0.1');
      sockets.add(s).add(up);
      s.pipe(up).pipe(s);
      s.on('error', () => up.destroy());
      up.on('error', () => s.destroy());
    });
    await new Promise<void>((r) => tls.listen(0, '127.0.0.1', r));
    t.teardown(() => {
      for (const s of sockets) s.destroy();
      tls.close();
    });
    const endpoint = `https://127.0.0.1:${(tls.address() as { port: number }).port}/v1`;
    const out = join(work, 'datasets');
    const script = `
      const o = JSON.parse(process.env.JOB);
      // init() before the package loads: downloaddatasets.js reads the options once, at its own load.
      require('tardis-dev/dist/options').init({ datasetsEndpoint: o.endpoint });
      const { downloadDatasets } = require('tardis-dev');
      (async () => {
        for (const [exchange, symbols] of Object.entries(o.symbols)) {
          await downloadDatasets({ exchange, dataTypes: o.types, from: o.from, to: o.to, symbols, apiKey: o.key, downloadDir: o.out });
        }
      })().then(() => process.exit(0), (e) => { console.error(e); process.exit(1); });`;
    const job = { endpoint, symbols: { [EXCHANGE]: symbols }, types: TYPES, from, to, key: sd.key, out };
    await run(process.execPath, ['-e', script], {
      cwd: REPO,
      env: { ...process.env, JOB: JSON.stringify(job), NODE_EXTRA_CA_CERTS: join(work, 'cert.pem') },
    });
    await check(t, out);
    // A wrong key is refused at once (the client does not retry a 401).
    const bad = await run(process.execPath, ['-e', script], {
      cwd: REPO,
      env: {
        ...process.env,
        JOB: JSON.stringify({ ...job, key: 'nope', out: join(work, 'bad') }),
        NODE_EXTRA_CA_CERTS: join(work, 'cert.pem'),
      },
    }).then(
      () => null,
      (e: { stderr: string }) => e.stderr,
    );
    t.match(bad, /401/, 'a wrong key: the client reports the 401');
  });

  t.test('Python tardis-dev download_datasets', async (t) => {
    const folder = requireTool(t, 'python');
    if (!folder) return;
    const work = mkdtempSync(join(tmpdir(), 'pmtape-tardis-py-'));
    t.teardown(() => rmSync(work, { recursive: true, force: true }));
    const out = join(work, 'datasets');
    const script = [
      'import json, os',
      'from tardis_dev import download_datasets',
      'o = json.loads(os.environ["JOB"])',
      'for exchange, symbols in o["symbols"].items():',
      '    download_datasets(exchange=exchange, data_types=o["types"], symbols=symbols, from_date=o["from"], to_date=o["to"],',
      '                      api_key=o["key"], download_dir=o["out"], endpoint=o["endpoint"])',
    ].join('\n');
    const job = { endpoint: `${sd.base}/v1`, symbols: { [EXCHANGE]: symbols }, types: TYPES, from, to, key: sd.key, out };
    await run(pythonIn(folder, 'tardis'), ['-c', script], { env: { ...process.env, JOB: JSON.stringify(job) } });
    await check(t, out);
  });
});
