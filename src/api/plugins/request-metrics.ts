// Request counts and latency histograms for /metrics, labelled by route pattern (never by raw URL,
// so market ids cannot blow up the number of series). A request adds to plain numbers (a typed
// array indexed by status, a bucket count, a sum); the Prometheus text is made from them at scrape
// time. prom-client's labelled children hash their label object on every `inc`/`observe` (time and
// an allocation on every request), which is the price of arbitrary labels this does not need.

/** Upper bounds (seconds) of the latency histogram's buckets. */
export const LATENCY_BUCKETS: readonly number[] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5];

const REQUESTS = 'pmtape_http_requests_total';
const LATENCY = 'pmtape_http_request_duration_seconds';

/** One route's tallies since the process started. */
export class RouteTally {
  /** Requests by status code (index = status), made on the route's first request. */
  private byStatus: Float64Array | null = null;
  /** Requests by latency bucket (not cumulative); the last slot is above every bound. */
  private readonly buckets = new Float64Array(LATENCY_BUCKETS.length + 1);
  private sum = 0;
  private count = 0;

  constructor(readonly route: string) {}

  record(status: number, elapsedMs: number): void {
    (this.byStatus ??= new Float64Array(600))[status >= 100 && status < 600 ? status : 0]++;
    const s = elapsedMs / 1000;
    let i = 0;
    while (i < LATENCY_BUCKETS.length && s > LATENCY_BUCKETS[i]) i++;
    this.buckets[i]++;
    this.sum += s;
    this.count++;
  }

  requestLines(out: string[]): void {
    if (this.byStatus === null) return;
    const route = labelValue(this.route);
    for (let status = 0; status < 600; status++) {
      const n = this.byStatus[status];
      if (n > 0) out.push(`${REQUESTS}{route="${route}",status="${status}"} ${n}`);
    }
  }

  latencyLines(out: string[]): void {
    if (this.count === 0) return;
    const route = labelValue(this.route);
    let acc = 0;
    LATENCY_BUCKETS.forEach((le, i) => {
      acc += this.buckets[i];
      out.push(`${LATENCY}_bucket{le="${le}",route="${route}"} ${acc}`);
    });
    out.push(`${LATENCY}_bucket{le="+Inf",route="${route}"} ${this.count}`);
    out.push(`${LATENCY}_sum{route="${route}"} ${this.sum}`);
    out.push(`${LATENCY}_count{route="${route}"} ${this.count}`);
  }
}

/** Prometheus text escaping of a label value. */
const labelValue = (v: string): string => v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');

const tallies = new Map<string, RouteTally>();

/** The tally of a route label, made on first use (at route registration, not per request). */
export function routeTally(route: string): RouteTally {
  let t = tallies.get(route);
  if (t === undefined) tallies.set(route, (t = new RouteTally(route)));
  return t;
}

/** Both HTTP series in Prometheus text format, appended to the registry's text by `/metrics`. */
export function requestMetricsText(): string {
  const requests: string[] = [];
  const latency: string[] = [];
  for (const t of tallies.values()) {
    t.requestLines(requests);
    t.latencyLines(latency);
  }
  return [
    `# HELP ${REQUESTS} HTTP requests by route and status code`,
    `# TYPE ${REQUESTS} counter`,
    ...requests,
    `# HELP ${LATENCY} HTTP request latency by route`,
    `# TYPE ${LATENCY} histogram`,
    ...latency,
    '',
  ].join('\n');
}
