// The page plugin inside the real API app: `/` and its assets are served without a key from the
// repository's public/ folder, while unknown paths still get the API's own 404 envelope and no path
// trick reaches a file outside public/.

import t from 'tap';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { buildApp } from '../../src/api/app.js';
import { publicDir } from '../../src/api/plugins/page.js';
import { loadConfig } from '../../src/config.js';
import { REPO, tempDir } from './helpers.js';

t.test('the page is served at / next to the API, and only the page', async (t) => {
  t.equal(publicDir(), join(REPO, 'public'), 'assets resolve to the top-level public/ folder from dist/');
  t.ok(existsSync(join(publicDir(), 'index.html')), 'which holds index.html');

  const config = loadConfig({ dataDir: tempDir(t) }, {});
  const app = await buildApp({ config, logger: false });
  t.teardown(() => app.close());

  const index = await app.inject({ method: 'GET', url: '/' });
  t.equal(index.statusCode, 200, '/ answers 200 without a key');
  t.match(index.headers['content-type'], /text\/html/, 'as HTML');
  t.match(index.body, /<script type="module" src="\/app\.js">/, 'loading the page script');
  for (const asset of ['/app.js', '/depth.js', '/timeline.js', '/style.css']) {
    const res = await app.inject({ method: 'GET', url: asset });
    t.equal(res.statusCode, 200, `${asset} is served`);
  }

  const unknown = await app.inject({ method: 'GET', url: '/no/such/page' });
  t.equal(unknown.statusCode, 404, 'an unknown path is 404');
  t.equal(JSON.parse(unknown.body).error?.code, 'not_found', 'with the API error envelope');
  for (const url of ['/../package.json', '/%2e%2e/package.json', '/..%2fpackage.json', '/public/../README.md']) {
    const res = await app.inject({ method: 'GET', url });
    t.ok(res.statusCode >= 400 && res.statusCode < 500, `${url} is refused (${res.statusCode})`);
    t.notMatch(res.body, /"name": "pmtape"|# pmtape/, `${url} does not leak a repository file`);
  }
  const v3 = await app.inject({ method: 'GET', url: '/v3/btc/markets' });
  t.equal(v3.statusCode, 401, 'the API routes still need a key');
});
