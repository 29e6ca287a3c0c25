// `/metrics` of a real `pmtape serve`: prom-client's default metrics are all there except the GC
// histogram, whose per-collection observer lengthens the API's tail latency (src/metrics.ts), and
// PMTAPE_GC_METRICS=on brings that histogram back, counting real collections.

import { mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import client from 'prom-client';
import t from 'tap';
import { tempDir } from './selfhost/helpers.js';
import { startServe } from './client/serve-helpers.js';

const requireCjs = createRequire(import.meta.url);
/** The series names prom-client's default metric `name` registers (each module lists its own). */
const namesOf = (name: string): string[] => (requireCjs(`prom-client/lib/metrics/${name}`) as { metricNames: string[] }).metricNames;
const GC = 'pmtape_nodejs_gc_duration_seconds';

async function metricsText(url: string): Promise<string> {
  const res = await fetch(`${url}/metrics`);
  if (res.status !== 200) throw new Error(`/metrics answered ${res.status}`);
  return res.text();
}

/** The `_count` of the GC histogram summed over kinds, or null when it is not served. */
function gcCount(text: string): number | null {
  const counts = [...text.matchAll(new RegExp(`^${GC}_count\\{[^}]*\\} (\\d+)$`, 'gm'))].map((m) => Number(m[1]));
  return text.includes(`# TYPE ${GC} histogram`) ? counts.reduce((a, x) => a + x, 0) : null;
}

t.test('serve: every default metric but the GC histogram, by default', async (t) => {
  const dir = tempDir(t, 'pmtape-metrics-');
  mkdirSync(join(dir, 'data'));
  const url = await startServe(t, join(dir, 'data'));
  const text = await metricsText(url);
  const expected = client.collectDefaultMetrics.metricsList.filter((n) => n !== 'gc').flatMap(namesOf);
  t.ok(expected.length >= 20, `prom-client lists ${expected.length} default series`);
  const missing = expected.filter((n) => !text.includes(`# TYPE pmtape_${n} `));
  t.same(missing, [], 'each of them is served with the pmtape_ prefix');
  t.equal(gcCount(text), null, 'no GC histogram: nothing observes collections');
  t.match(text, /^pmtape_process_cpu_seconds_total \d/m, 'values, not only declarations');
});

t.test('serve with PMTAPE_GC_METRICS=on: the GC histogram counts real collections', async (t) => {
  const dir = tempDir(t, 'pmtape-metrics-');
  mkdirSync(join(dir, 'data'));
  const url = await startServe(t, join(dir, 'data'), { PMTAPE_GC_METRICS: 'on' });
  let count = gcCount(await metricsText(url));
  t.not(count, null, 'the histogram is served');
  // Requests allocate; the young generation fills within a few hundred of them. A generous bound
  // instead of a timing assumption: stop at the first collection counted.
  for (let i = 0; i < 5_000 && !count; i++) {
    await (await fetch(`${url}/docs/json`)).arrayBuffer();
    if (i % 50 === 49) count = gcCount(await metricsText(url));
  }
  t.ok(count !== null && count > 0, `collections counted (${count})`);
});
