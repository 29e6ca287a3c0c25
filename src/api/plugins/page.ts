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
  });
}

export default pagePlugin;
