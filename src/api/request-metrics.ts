// Request counts and latency histograms for /metrics, labelled by route pattern (never by raw URL,
// so market ids cannot blow up the number of series).

import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { httpLatency, httpRequests } from '../metrics.js';

async function requestMetrics(app: FastifyInstance): Promise<void> {
  app.addHook('onResponse', async (req, reply) => {
    const route = req.routeOptions.url ?? 'unknown';
    httpRequests.inc({ route, status: String(reply.statusCode) });
    httpLatency.observe({ route }, reply.elapsedTime / 1000);
  });
}

export default fp(requestMetrics, { name: 'pmtape-request-metrics' });
