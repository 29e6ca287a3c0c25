// The page served at `/`: static assets from the top-level `public/` folder (plain HTML, CSS and
// browser ES modules, no build step), so it exists in a clean clone after `npm ci` — tsc does not
// copy non-TS files, hence the folder lives outside src/ and is resolved from this module's location.

import { existsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance } from 'fastify';
import fastifyStatic from '@fastify/static';

/**
 * Where the page's files live. Compiled, this module is dist/src/api/plugins/page.js; from source it is
 * src/api/plugins/page.ts: the first existing candidate wins so both layouts find the repository's public/.
 */
export function publicDir(): string {
  const here = dirname(fileURLToPath(import.meta.url));
  const candidates = [resolve(here, '../../../../public'), resolve(here, '../../../public')];
  for (const dir of candidates) if (existsSync(resolve(dir, 'index.html'))) return dir;
  return candidates[0];
}

/**
 * The page's Content-Security-Policy. The page is where a key is pasted, so only its own files may
 * run or load: scripts and style sheets from this origin (the page has no inline script or
 * `<style>` element; test/selfhost/page-headers.test.ts checks), requests to this origin only
 * (`'self'` covers the stream's ws:/wss: on the same host), no framing, no plugins. Style
 * *attributes* stay allowed: the page colours chart swatches and overview cells with
 * `style="background:…"` built from its own constants, and an attribute cannot run script.
 */
export const PAGE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "style-src-attr 'unsafe-inline'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

/** Headers of every page file: the policy above, no framing (old browsers), no type sniffing, no referrer. */
export const PAGE_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy': PAGE_CSP,
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
};

/**
 * Registers the page. `wildcard: false` routes only the files present at start, so unknown paths
 * still reach the API's own 404 handler (and its error envelope) instead of a catch-all route.
 * No key is needed for these files: the page asks for one and sends it with each /v3 request.
 */
export async function pagePlugin(app: FastifyInstance): Promise<void> {
  const root = publicDir();
  if (!existsSync(resolve(root, 'index.html'))) {
    app.pmtape.log.warn({ root }, 'page assets not found; / will answer 404');
    return;
  }
  await app.register(fastifyStatic, {
    root,
    prefix: '/',
    wildcard: false,
    index: ['index.html'],
    decorateReply: false,
    cacheControl: true,
    maxAge: '5m',
    setHeaders: (res) => {
      void res.headers(PAGE_HEADERS);
    },
  });
}

export default pagePlugin;
