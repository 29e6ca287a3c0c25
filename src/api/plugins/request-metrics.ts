// Request counts and latency histograms for /metrics, labelled by route pattern (never by raw URL,
// so market ids cannot blow up the number of series). Each route gets its own `onResponse` hook at
// registration with its label children resolved once, so a request neither builds `routeOptions`
// nor hashes label objects; unmatched URLs (404s) are counted by one global hook as `unknown`.

import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { httpLatency, httpRequests } from '../../metrics.js';

type Done = (err?: Error) => void;

/** A recorder for one route label: the latency child, and a counter child per status code. */
function recorder(route: string): (reply: FastifyReply) => void {
  const latency = httpLatency.labels(route);
  const counts = new Map<number, ReturnType<typeof httpRequests.labels>>();
  return (reply) => {
    const status = reply.statusCode;
    let c = counts.get(status);
    if (c === undefined) counts.set(status, (c = httpRequests.labels(route, String(status))));
    c.inc();
    latency.observe(reply.elapsedTime / 1000);
  };
}

async function requestMetrics(app: FastifyInstance): Promise<void> {
  app.addHook('onRoute', (route) => {
    const record = recorder(route.url);
    const hook = (_req: FastifyRequest, reply: FastifyReply, done: Done): void => {
      record(reply);
      done();
    };
    const own = route.onResponse;
    route.onResponse = own === undefined ? [hook] : [...(Array.isArray(own) ? own : [own]), hook];
  });
  const unknown = recorder('unknown');
  app.addHook('onResponse', (req: FastifyRequest, reply: FastifyReply, done: Done) => {
    if (req.is404) unknown(reply);
    done();
  });
}

export default fp(requestMetrics, { name: 'pmtape-request-metrics' });
