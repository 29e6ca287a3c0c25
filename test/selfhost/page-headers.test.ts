// The page where users paste their key is served with a Content-Security-Policy, X-Frame-Options and
// nosniff, and the page works under that policy: no inline script, no `<style>` element, no inline
// event handler, no eval, nothing loaded from another origin (page.test.ts runs it in Chromium
// where Chromium exists; this check runs everywhere).

import t from 'tap';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildApp } from '../../src/api/app.js';
import { PAGE_CSP, publicDir } from '../../src/api/plugins/page.js';
import { loadConfig } from '../../src/config.js';
import { tempDir } from './helpers.js';

const directives = (csp: string): Map<string, string[]> =>
  new Map(
    csp
      .split(';')
      .map((d) => d.trim().split(/\s+/))
      .filter((d) => d[0])
      .map(([k, ...v]) => [k, v]),
  );

t.test('every page file carries the policy, and the API routes are unchanged', async (t) => {
  const app = await buildApp({ config: loadConfig({ dataDir: tempDir(t) }, {}), logger: false });
  t.teardown(() => app.close());
  const files = readdirSync(publicDir());
  t.ok(files.includes('index.html'));
  for (const url of ['/', ...files.map((f) => `/${f}`)]) {
    const res = await app.inject({ method: 'GET', url });
    t.equal(res.statusCode, 200, `${url} is served`);
    t.equal(res.headers['content-security-policy'], PAGE_CSP, `${url}: Content-Security-Policy`);
    t.equal(res.headers['x-frame-options'], 'DENY', `${url}: X-Frame-Options`);
    t.equal(res.headers['x-content-type-options'], 'nosniff', `${url}: nosniff`);
  }
  const csp = directives(PAGE_CSP);
  t.same(csp.get('default-src'), ["'none'"], 'nothing is allowed unless named');
  t.same(csp.get('script-src'), ["'self'"], "scripts only from the page's origin: no inline script, no eval");
  t.same(csp.get('style-src'), ["'self'"], "style sheets only from the page's origin");
  t.same(csp.get('connect-src'), ["'self'"], 'requests (and the stream) to this origin only');
  t.same(csp.get('frame-ancestors'), ["'none'"], 'never framed');
  const api = await app.inject({ method: 'GET', url: '/healthz' });
  t.equal(api.headers['content-security-policy'], undefined, 'the API routes are not the page');
});

t.test('the page needs nothing the policy forbids', async (t) => {
  const dir = publicDir();
  const html = readFileSync(join(dir, 'index.html'), 'utf8');
  const scripts = [...html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/gi)];
  t.ok(scripts.length > 0, 'the page has scripts');
  for (const [, attrs, body] of scripts) {
    t.match(attrs, /\bsrc="\/[^"/][^"]*"/, `a script from the page's origin (${attrs.trim()})`);
    t.equal(body.trim(), '', 'with no inline code');
  }
  t.notMatch(html, /<style\b/i, 'no <style> element');
  t.notMatch(html, /\son[a-z]+\s*=/i, 'no inline event handler');
  t.notMatch(html, /(src|href)="(https?:)?\/\//i, 'nothing from another origin');
  for (const f of readdirSync(dir).filter((n) => n.endsWith('.js'))) {
    const js = readFileSync(join(dir, f), 'utf8');
    t.notMatch(js, /\beval\(|new Function\(|setTimeout\(\s*['"`]/, `${f}: no eval`);
    t.notMatch(js, /<script|<style/i, `${f}: inserts no script or style element`);
    t.notMatch(js, /\son[a-z]+=["'`$]/i, `${f}: no inline handler in markup it builds`);
    t.notMatch(js, /(fetch|WebSocket)\(\s*['"`]https?:/, `${f}: no request to another origin`);
    for (const m of js.matchAll(/import\s[^'"]*['"]([^'"]+)['"]/g)) t.match(m[1], /^\.\//, `${f}: imports ${m[1]} from the page's origin`);
  }
  const css = readFileSync(join(dir, 'style.css'), 'utf8');
  t.notMatch(css, /@import|url\(\s*['"]?(https?:)?\/\//i, 'style.css loads nothing from elsewhere');
});
