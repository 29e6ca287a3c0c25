// One family's REST routes, mounted under each of its prefixes by app.ts: the market list, the book
// routes (snapshots, latest, as_of), candles and, where the family records metric series, their
// routes; all from its descriptor.

import type { FastifyInstance } from 'fastify';
import type { FamilyDescriptor } from '../../families/descriptor.js';
import { bookRoutes } from './book-routes.js';
import { candleRoutes } from './candles.js';
import { marketsRoute } from './markets.js';
import { seriesRoutes } from './series-routes.js';

export interface FamilyRoutesOptions {
  readonly descriptor: FamilyDescriptor;
}

export default function familyRoutes(app: FastifyInstance, opts: FamilyRoutesOptions): Promise<void> {
  const d = opts.descriptor;
  marketsRoute(app, d);
  bookRoutes(app, d);
  candleRoutes(app, d);
  if (d.routes.series) seriesRoutes(app, d, d.routes.series.metrics);
  return Promise.resolve();
}
