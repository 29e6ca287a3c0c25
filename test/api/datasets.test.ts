// `GET /v3/datasets` and `GET /v3/datasets/files/<path>` on a compacted data dir: listing from
// manifests with filters and cursors, downloads over a real socket with Range/ETag/Content-Length,
// plans, and paths that try to leave the Parquet root.

import t from 'tap';
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, symlink, truncate, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { compactDay } from '../../src/storage/testing.js';
import { keysFor, seedAll, testApp, testConfig, tmpDataDir } from './helpers.js';

const DAY = '2026-07-26';

t.test('datasets routes', async (t) => {
  const dir = tmpDataDir(t);
  await seedAll(dir);
  await compactDay(dir, DAY);
  const { free, paid } = await keysFor(dir);
  const app = await testApp(t, testConfig(dir));
  const url = await app.listen({ port: 0, host: '127.0.0.1' });
  const get = (path: string, key: string | null, headers: Record<string, string> = {}) =>
    fetch(url + path, { headers: { ...(key ? { authorization: `Bearer ${key}` } : {}), ...headers } });
  const json = async (path: string, key: string | null = paid) => {
    const r = await get(path, key);
    return { status: r.status, body: (await r.json()) as Record<string, any> };
  };

  t.test('lists every published file with rows, bytes, sha256 and time range', async (t) => {
    const { status, body } = await json('/v3/datasets');
    t.equal(status, 200);
    const paths = body.data.map((e: { path: string }) => e.path).sort();
    t.same(paths, [
      `family=coin/dataset=book_changes/date=${DAY}/book_changes-${DAY}-0000.parquet`,
      `family=coin/dataset=book_snapshots/date=${DAY}/book_snapshots-${DAY}-0000.parquet`,
      `family=coin/dataset=candles/date=${DAY}/candles-${DAY}-0000.parquet`,
      `family=coin/dataset=catalog/date=${DAY}/catalog-${DAY}-0000.parquet`,
      `family=coin/dataset=gaps/date=${DAY}/gaps-${DAY}-0000.parquet`,
      `family=coin/dataset=markets/date=${DAY}/markets-${DAY}-0000.parquet`,
      `family=coin/dataset=trades/date=${DAY}/trades-${DAY}-0000.parquet`,
      `family=wallet-prediction/dataset=book_changes/date=${DAY}/book_changes-${DAY}-0000.parquet`,
      `family=wallet-prediction/dataset=book_snapshots/date=${DAY}/book_snapshots-${DAY}-0000.parquet`,
      `family=wallet-prediction/dataset=candles/date=${DAY}/candles-${DAY}-0000.parquet`,
      `family=wallet-prediction/dataset=catalog/date=${DAY}/catalog-${DAY}-0000.parquet`,
      `family=wallet-prediction/dataset=gaps/date=${DAY}/gaps-${DAY}-0000.parquet`, // empty: no gap that day
      `family=wallet-prediction/dataset=markets/date=${DAY}/markets-${DAY}-0000.parquet`,
      `family=wallet-prediction/dataset=metrics/date=${DAY}/metrics-${DAY}-0000.parquet`,
      `family=wallet-prediction/dataset=trades/date=${DAY}/trades-${DAY}-0000.parquet`, // empty
      `family=yesno-exchange/dataset=book_changes/date=${DAY}/book_changes-${DAY}-0000.parquet`,
      `family=yesno-exchange/dataset=book_snapshots/date=${DAY}/book_snapshots-${DAY}-0000.parquet`,
      `family=yesno-exchange/dataset=candles/date=${DAY}/candles-${DAY}-0000.parquet`,
      `family=yesno-exchange/dataset=catalog/date=${DAY}/catalog-${DAY}-0000.parquet`,
      `family=yesno-exchange/dataset=gaps/date=${DAY}/gaps-${DAY}-0000.parquet`, // empty
      `family=yesno-exchange/dataset=markets/date=${DAY}/markets-${DAY}-0000.parquet`,
      `family=yesno-exchange/dataset=trades/date=${DAY}/trades-${DAY}-0000.parquet`, // empty
    ]);
    t.equal(body.next_cursor, null);
    const e = body.data.find((x: { path: string }) => x.path.startsWith('family=coin/dataset=book_changes'));
    const bytes = await readFile(join(dir, 'parquet', e.path));
    t.equal(e.bytes, bytes.length);
    t.equal(e.sha256, createHash('sha256').update(bytes).digest('hex'));
    t.ok(e.rows > 400, `rows counts every level change of the day (${e.rows})`);
    t.match(e.min_time, /^2026-07-26T12:00:00\.000Z$/);
    t.match(e.max_time, /^2026-07-26T\d\d:\d\d:\d\d\.\d{3}Z$/);
    t.same(Object.keys(e).sort(), ['bytes', 'max_time', 'min_time', 'path', 'rows', 'sha256']);
  });

  t.test('filters by family and date; pages with a cursor that never repeats', async (t) => {
    const coin = await json('/v3/datasets?family=coin');
    t.equal(coin.body.data.length, 7);
    t.equal((await json(`/v3/datasets?start_date=2026-07-27`)).body.data.length, 0);
    t.equal((await json(`/v3/datasets?end_date=2026-07-25`)).body.data.length, 0);
    t.equal((await json(`/v3/datasets?start_date=${DAY}&end_date=${DAY}`)).body.data.length, 22, 'four of them empty');
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: { body: Record<string, any> } = await json(
        `/v3/datasets?limit=3${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      );
      seen.push(...page.body.data.map((x: { path: string }) => x.path));
      cursor = page.body.next_cursor;
    } while (cursor);
    t.equal(seen.length, 22);
    t.equal(new Set(seen).size, 22);
  });

  t.test('rejects bad dates, tampered cursors and unknown parameters with the envelope', async (t) => {
    const bad = await json('/v3/datasets?start_date=yesterday');
    t.equal(bad.status, 400);
    t.equal(bad.body.error.code, 'invalid_parameter');
    t.match(bad.body.error.message, /start_date/);
    t.equal((await json('/v3/datasets?start_date=2026-07-28&end_date=2026-07-27')).status, 400);
    const page = await json('/v3/datasets?limit=1');
    const c = page.body.next_cursor as string;
    const tampered = await json(`/v3/datasets?limit=1&cursor=${encodeURIComponent(c.slice(0, -2) + (c.endsWith('A') ? 'BB' : 'AA'))}`);
    t.equal(tampered.body.error.code, 'invalid_cursor');
    const other = await json(`/v3/datasets?family=coin&cursor=${encodeURIComponent(c)}`);
    t.equal(other.body.error.code, 'invalid_cursor', 'a cursor carries its query');
    t.equal((await json('/v3/datasets?colour=blue')).status, 400);
  });

  t.test('wallet-prediction partitions need the paid plan', async (t) => {
    const listed = await json('/v3/datasets', free);
    t.equal(listed.status, 200);
    t.notOk(
      listed.body.data.some((e: { path: string }) => e.path.includes('wallet-prediction')),
      'hidden from a free key',
    );
    t.equal((await json('/v3/datasets?family=wallet-prediction', free)).body.error.code, 'plan_required');
    const r = await get(`/v3/datasets/files/family=wallet-prediction/dataset=metrics/date=${DAY}/metrics-${DAY}-0000.parquet`, free);
    t.equal(r.status, 403);
    t.equal((await r.json()).error.code, 'plan_required');
    t.equal(
      (await get(`/v3/datasets/files/family=wallet-prediction/dataset=metrics/date=${DAY}/metrics-${DAY}-0000.parquet`, paid)).status,
      200,
    );
    t.equal((await json('/v3/datasets', null)).body.error.code, 'unauthorized');
  });

  const file = `family=coin/dataset=trades/date=${DAY}/trades-${DAY}-0000.parquet`;

  t.test('a book_changes file downloads like any other', async (t) => {
    const bc = `family=coin/dataset=book_changes/date=${DAY}/book_changes-${DAY}-0000.parquet`;
    const r = await get(`/v3/datasets/files/${bc}`, free);
    t.equal(r.status, 200);
    t.ok(Buffer.from(await r.arrayBuffer()).equals(await readFile(join(dir, 'parquet', bc))));
  });

  t.test('downloads stream the exact file with Content-Length and ETag; If-None-Match answers 304', async (t) => {
    const onDisk = await readFile(join(dir, 'parquet', file));
    const r = await get(`/v3/datasets/files/${file}`, free);
    t.equal(r.status, 200);
    const body = Buffer.from(await r.arrayBuffer());
    t.ok(body.equals(onDisk));
    t.equal(r.headers.get('content-length'), String(onDisk.length));
    t.equal(r.headers.get('accept-ranges'), 'bytes');
    const etag = r.headers.get('etag')!;
    t.equal(etag, `"${createHash('sha256').update(onDisk).digest('hex')}"`);
    const again = await get(`/v3/datasets/files/${file}`, free, { 'if-none-match': etag });
    t.equal(again.status, 304);
  });

  t.test('Range requests return exactly the asked bytes; unsatisfiable ranges get 416', async (t) => {
    const onDisk = await readFile(join(dir, 'parquet', file));
    const head = await get(`/v3/datasets/files/${file}`, free, { range: 'bytes=0-3' });
    t.equal(head.status, 206);
    t.equal(Buffer.from(await head.arrayBuffer()).toString(), 'PAR1');
    t.equal(head.headers.get('content-range'), `bytes 0-3/${onDisk.length}`);
    t.equal(head.headers.get('content-length'), '4');
    const tail = await get(`/v3/datasets/files/${file}`, free, { range: 'bytes=-8' });
    t.ok(Buffer.from(await tail.arrayBuffer()).equals(onDisk.subarray(onDisk.length - 8)));
    const mid = await get(`/v3/datasets/files/${file}`, free, { range: 'bytes=100-' });
    t.ok(Buffer.from(await mid.arrayBuffer()).equals(onDisk.subarray(100)));
    const bad = await get(`/v3/datasets/files/${file}`, free, { range: `bytes=${onDisk.length}-` });
    t.equal(bad.status, 416);
    t.equal(bad.headers.get('content-range'), `bytes */${onDisk.length}`);
    t.equal((await bad.json()).error.status, 416);
    const stale = await get(`/v3/datasets/files/${file}`, free, { range: 'bytes=0-3', 'if-range': '"not-the-etag"' });
    t.equal(stale.status, 200, 'If-Range with another ETag gets the whole file');
    await stale.arrayBuffer();
  });

  t.test('If-Range with the current ETag resumes; other conditions follow the sha256 ETag, not the mtime', async (t) => {
    const onDisk = await readFile(join(dir, 'parquet', file));
    const etag = `"${createHash('sha256').update(onDisk).digest('hex')}"`;
    const resume = await get(`/v3/datasets/files/${file}`, free, { range: 'bytes=100-199', 'if-range': etag });
    t.equal(resume.status, 206, 'a matching If-Range keeps the range');
    t.equal(resume.headers.get('content-range'), `bytes 100-199/${onDisk.length}`);
    t.equal(resume.headers.get('etag'), etag);
    t.ok(Buffer.from(await resume.arrayBuffer()).equals(onDisk.subarray(100, 200)));
    const dated = await get(`/v3/datasets/files/${file}`, free, {
      range: 'bytes=0-3',
      'if-range': new Date(Date.now() + 86_400_000).toUTCString(),
    });
    t.equal(dated.status, 200, 'If-Range with a date (no Last-Modified is sent) gets the whole file');
    t.ok(Buffer.from(await dated.arrayBuffer()).equals(onDisk));
    const weak = await get(`/v3/datasets/files/${file}`, free, { 'if-none-match': `"other", W/${etag}` });
    t.equal(weak.status, 304, 'If-None-Match compares weakly, in a list');
    t.equal(weak.headers.get('etag'), etag);
    for (const [h, v] of [
      ['if-match', '"other"'],
      ['if-unmodified-since', 'Thu, 01 Jan 1970 00:00:00 GMT'],
      ['if-modified-since', new Date(Date.now() + 86_400_000).toUTCString()],
    ]) {
      const r = await get(`/v3/datasets/files/${file}`, free, { [h]: v });
      t.equal(r.status, 200, `${h} is not judged against the file's mtime`);
      t.equal(Number(r.headers.get('content-length')), onDisk.length);
      await r.arrayBuffer();
    }
    const head = await fetch(`${url}/v3/datasets/files/${file}`, { method: 'HEAD', headers: { authorization: `Bearer ${free}` } });
    t.equal(head.status, 200);
    t.equal(head.headers.get('content-length'), String(onDisk.length));
    t.equal(head.headers.get('etag'), etag);
    t.equal((await head.arrayBuffer()).byteLength, 0, 'HEAD sends no body');
  });

  t.test('an unsatisfiable range is a 416 with the error envelope, and a key is still required', async (t) => {
    const size = (await readFile(join(dir, 'parquet', file))).length;
    for (const range of [`bytes=${size}-`, `bytes=${size + 10}-${size + 20}`, 'bytes=9-3']) {
      const r = await get(`/v3/datasets/files/${file}`, free, { range });
      t.equal(r.status, 416, range);
      t.equal(r.headers.get('content-range'), `bytes */${size}`);
      t.match(r.headers.get('content-type'), /^application\/json/);
      t.match(await r.json(), {
        error: { status: 416, code: 'range_not_satisfiable', message: new RegExp(`Range.*${size} bytes`), request_id: /./ },
      });
    }
    const anon = await get(`/v3/datasets/files/${file}`, null);
    t.equal(anon.status, 401);
    t.match(await anon.json(), { error: { status: 401, code: 'unauthorized', request_id: /./ } });
  });

  t.test('a symlink is served only while it resolves inside the Parquet root', async (t) => {
    const outside = await mkdtemp(join(tmpdir(), 'pmtape-outside-'));
    t.teardown(() => rm(outside, { recursive: true, force: true }));
    const secret = Buffer.from('PAR1 a file outside the data dir PAR1');
    await writeFile(join(outside, 'secret.parquet'), secret);
    const partition = join(dir, 'parquet', `family=coin/dataset=trades/date=${DAY}`);
    const manifestPath = join(partition, '_manifest.json');
    const original = await readFile(manifestPath, 'utf8');
    t.teardown(() => writeFile(manifestPath, original));
    const m = JSON.parse(original);
    const first = m.files[0];
    const list = (name: string, bytes: number, sha: string) => ({ ...first, file: name, bytes, sha256: sha });
    const onDisk = await readFile(join(partition, first.file));
    await symlink(join(outside, 'secret.parquet'), join(partition, 'escape.parquet'));
    await symlink(first.file, join(partition, 'alias.parquet'));
    m.files = [
      ...m.files,
      list('escape.parquet', secret.length, createHash('sha256').update(secret).digest('hex')),
      list('alias.parquet', onDisk.length, first.sha256),
    ];
    await writeFile(manifestPath, JSON.stringify(m));
    const escape = await get(`/v3/datasets/files/family=coin/dataset=trades/date=${DAY}/escape.parquet`, paid);
    t.equal(escape.status, 404, 'a listed symlink to a file outside is not followed');
    const body = await escape.text();
    t.notMatch(body, /outside the data dir/);
    t.match(body, /"code":"not_found".*"request_id":"[^"]+"/, 'the error envelope');
    const alias = await get(`/v3/datasets/files/family=coin/dataset=trades/date=${DAY}/alias.parquet`, paid);
    t.equal(alias.status, 200, 'a symlink inside the root is an ordinary file');
    t.ok(Buffer.from(await alias.arrayBuffer()).equals(onDisk));

    // A whole partition folder that is a symlink to another place, with its own manifest.
    const date = '2026-07-20';
    await mkdir(join(outside, 'part'));
    await writeFile(join(outside, 'part', `trades-${date}.parquet`), secret);
    await writeFile(
      join(outside, 'part', '_manifest.json'),
      JSON.stringify({ ...m, date, files: [list(`trades-${date}.parquet`, secret.length, 'ab')] }),
    );
    await symlink(join(outside, 'part'), join(dir, 'parquet', `family=coin/dataset=trades/date=${date}`));
    const folder = await get(`/v3/datasets/files/family=coin/dataset=trades/date=${date}/trades-${date}.parquet`, paid);
    t.equal(folder.status, 404, 'a partition folder linked to outside the root is not served');
    t.notMatch(await folder.text(), /outside the data dir/);
  });

  t.test('both routes publish their parameters and responses in the OpenAPI document', async (t) => {
    const doc = await (await fetch(`${url}/docs/json`)).json();
    const files = doc.paths['/v3/datasets/files/{*}'].get;
    t.match(files.parameters, [{ in: 'path', name: '*', required: true }]);
    t.same(Object.keys(files.responses).sort(), ['200', '206', '304', '400', '401', '403', '404', '416', '429', '500']);
    t.ok(files.responses['206'].content['application/vnd.apache.parquet'], 'a range is Parquet bytes');
    t.match(files.responses['416'].content['application/json'].schema.properties.error.required, [
      'status',
      'code',
      'message',
      'request_id',
    ]);
    const list = doc.paths['/v3/datasets'].get;
    t.same(list.parameters.map((x: { name: string }) => x.name).sort(), ['cursor', 'dataset', 'end_date', 'family', 'limit', 'start_date']);
    t.ok(list.responses['200'] && list.responses['400'], 'the page and the error envelope');
  });

  t.test('no path leaves the Parquet root or reaches an unpublished file', async (t) => {
    await writeFile(join(dir, 'parquet', `family=coin/dataset=gaps/date=${DAY}/_staging-gaps-${DAY}-0000.parquet.partial`), 'x');
    await writeFile(join(dir, 'parquet', `family=coin/dataset=gaps/date=${DAY}/extra.parquet`), 'not listed');
    const attempts = [
      '../../api/keys.json',
      '..%2F..%2Fapi%2Fkeys.json',
      `family=coin/dataset=gaps/date=${DAY}/../../../../etc/passwd`,
      `family=coin/dataset=gaps/date=${DAY}/%2e%2e%2f%2e%2e%2fx.parquet`,
      `family=coin/dataset=gaps/date=${DAY}/_manifest.json`,
      `family=coin/dataset=gaps/date=${DAY}/_staging-gaps-${DAY}-0000.parquet.partial`,
      `family=coin/dataset=gaps/date=${DAY}/extra.parquet`,
      `family=nope/dataset=gaps/date=${DAY}/gaps-${DAY}-0000.parquet`,
      `family=coin/dataset=gaps/date=2026-02-30/gaps-2026-02-30.parquet`,
      'family=coin/dataset=gaps/date=2026-07-26/',
      '',
      '%00',
      `family=coin/dataset=gaps/date=${DAY}/gaps-${DAY}-0000.parquet%00.txt`,
      '/etc/passwd',
      '%2Fetc%2Fpasswd',
      `/${dir.replace(/^\//, '')}/parquet/${file}`,
      `family=coin/dataset=gaps/date=${DAY}/..%2F..%2F..%2Fdataset=gaps%2Fdate=${DAY}%2Fgaps-${DAY}-0000.parquet`,
      `family=coin/dataset=gaps/date=${DAY}/%252e%252e%252fx.parquet`,
      `family=coin//dataset=gaps/date=${DAY}/gaps-${DAY}-0000.parquet`,
    ];
    for (const a of attempts) {
      const r = await get(`/v3/datasets/files/${a}`, paid);
      const body = await r.json();
      t.equal(r.status, body.error?.status === 400 ? 400 : 404, `${a} → ${r.status}`);
      t.ok(body.error?.request_id, 'error envelope');
    }
  });

  t.test('a file that no longer matches its manifest is refused, never sent under the old ETag', async (t) => {
    const path = join(dir, 'parquet', file);
    const original = await readFile(path);
    t.teardown(() => writeFile(path, original));
    await truncate(path, 100); // as if a re-compaction were replacing it at this moment
    const r = await get(`/v3/datasets/files/${file}`, free);
    t.equal(r.status, 404);
    t.match(await r.json(), { error: { code: 'not_found', message: /being replaced/, request_id: /./ } });
  });
});
