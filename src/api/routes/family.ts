// One family's REST routes, mounted under each of its prefixes by app.ts: the market list, the book
// routes (snapshots, latest, as_of), candles and the routes only that family has, all from its descriptor.

import type { FastifyInstance } from 'fastify';
import type { FamilyDescriptor } from '../../families/descriptor.js';
import { bookRoutes } from './book-routes.js';
import { candleRoutes } from './candles.js';
import { marketsRoute } from './markets.js';

export interface FamilyRoutesOptions {
  readonly descriptor: FamilyDescriptor;
}

export default async function familyRoutes(app: FastifyInstance, opts: FamilyRoutesOptions): Promise<void> {
  const d = opts.descriptor;
  marketsRoute(app, d);
  bookRoutes(app, d);
  candleRoutes(app, d);
  if (d.routes.extra) (await d.routes.extra())(app, d);
}
