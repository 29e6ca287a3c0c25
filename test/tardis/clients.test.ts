// The tardis-dev clients, unchanged, download a compacted day's files from a running `pmtape serve`
// (ephemeral port) with their datasets endpoint pointed at it and the pmtape key as their API key:
// the npm client's `downloadDatasets` (it speaks only HTTPS, so a TLS front with a throwaway
// certificate the child trusts through NODE_EXTRA_CA_CERTS sits before the server) and the Python
// client's `download_datasets` (venv `tardis` of tools/toolchains/python.ts). The books rebuilt from
// what they saved equal the API's `as_of`, and the files are the route's bytes.

import t from 'tap';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { createServer } from 'node:tls';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { testApp, testConfig, tmpDataDir } from '../api/helpers.js';
import { requireTool } from '../helpers/toolchains.js';
import { pythonIn } from '../../tools/toolchains/python.js';
import { REPO } from '../selfhost/helpers.js';
import { asOfBooks, compactedDay, DAY, fileIn, INSTANTS, launch, parseCsv, readGz, rebuild, run } from './helpers.js';

const SYMBOLS: Record<string, string[]> = {
  'pmtape-clob': ['540817-up', '540817-DOWN'], // any case: the clients capitalize them
  'pmtape-yesno': ['KXBTC15M-26JUL261215-15-YES', 'KXBTC15M-26JUL261215-15-NO'],
  'pmtape-wallet': ['W-9001-UP'],
};
const TYPES = ['incremental_book_L2', 'trades', 'book_snapshot_25', 'quotes'];

t.test('the tardis-dev clients download a sim day from serve', { timeout: 600_000 }, async (tt) => {
  const t = tt;
  const dir = tmpDataDir(t);
  const keys = await compactedDay(dir);
  const { url } = await launch(t, ['serve', '--port', '0', '--data-dir', dir]);
  const app = await testApp(t, testConfig(dir));
  const routeBytes = async (ex: string, type: string, sym: string): Promise<Buffer> =>
    (await app.inject({ url: `/v1/${ex}/${type}/2026/07/26/${sym}.csv.gz`, headers: { authorization: `Bearer ${keys.paid}` } })).rawPayload;

  const check = async (t: typeof tt, out: string): Promise<void> => {
    const names = readdirSync(out);
    t.equal(names.length, 5 * TYPES.length, `${names.length} files saved`);
    for (const [ex, syms] of Object.entries(SYMBOLS)) {
      for (const s of syms) {
        for (const type of TYPES) {
          const path = fileIn(out, ex, type, s.toUpperCase());
          t.ok(readFileSync(path).equals(await routeBytes(ex, type, s.toUpperCase())), `${path}: the route's bytes`);
        }
      }
    }
    let compared = 0;
    for (const T of INSTANTS) {
      const want = await asOfBooks(app, keys.paid, T);
      if (want === null) continue;
      for (const [sym, book] of want) {
        const ex = sym.startsWith('540817') ? 'pmtape-clob' : sym.startsWith('W-') ? 'pmtape-wallet' : 'pmtape-yesno';
        t.same(rebuild(parseCsv(readGz(fileIn(out, ex, 'incremental_book_L2', sym), gunzipSync)), T * 1000), book, `${sym} at ${T}`);
        compared++;
      }
    }
    t.ok(compared >= 30, `${compared} books compared with as_of`);
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
    const port = Number(new URL(url).port);
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
    const job = { endpoint, symbols: SYMBOLS, types: TYPES, from: DAY, to: '2026-07-27', key: keys.paid, out };
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
    const job = { endpoint: `${url}/v1`, symbols: SYMBOLS, types: TYPES, from: DAY, to: '2026-07-27', key: keys.paid, out };
    await run(pythonIn(folder, 'tardis'), ['-c', script], { env: { ...process.env, JOB: JSON.stringify(job) } });
    await check(t, out);
  });
});
