// Process entry of the read side: builds the app, listens, and closes it cleanly. `serve` runs it
// alone; `start` (and `demo`) run it beside the recorders. Port 0 picks a free port: the returned
// URL names the real one.

import { setFlagsFromString } from 'node:v8';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import type { Config } from '../config.js';
import { FAMILIES } from '../schema/observation.js';
import { warmDatasetRows, warmParquet } from '../storage/index.js';
import { buildApp, type AppOptions } from './app.js';
import { warmReplay } from './replay/warm-up.js';
import { ConnectionGuard } from './connection-guard.js';

export interface ApiServer {
  readonly app: FastifyInstance;
  /** `http://host:port` with the real port. */
  readonly url: string;
  /** Stops accepting, lets in-flight requests finish, closes streams and watchers. */
  close(): Promise<void>;
}

/**
 * No allocation-site pretenuring in a serving process. V8 moves an allocation site to the old
 * generation when most of its objects survive a young collection, which a burst of requests
 * waiting on disk (a cold start, a slow page) easily causes. Node's request objects then start in
 * the old generation, pointing at young ones (headers, buffers) that every scavenge must keep, in
 * most server runs and for as long as the process lived (measured on `orderbook/latest`:
 * docs/benchmarks.md, "Figures behind the code"). The flag is read at each collection, so
 * setting it at start is enough; nothing else in the process depends on it.
 */
export function tuneGcForServing(): void {
  setFlagsFromString('--no-allocation-site-pretenuring');
}

/**
 * What every first request would otherwise pay, paid at start (see `StartOptions.warmUp`): the
 * catalogue view of every family (built from the catalog logs, which grows with the days
 * recorded) and the Parquet read path (warm-up.ts). A failure is logged and the server starts anyway:
 * the requests that need the same data report it in their answers.
 */
async function warmReadSide(app: FastifyInstance, dataDir: string, replay: boolean): Promise<void> {
  const t0 = performance.now();
  const log = app.pmtape.log;
  // One key check first. Node's crypto sets itself up on the first hash of a process, and that
  // changed the prototype chain V8's optimized code of every typed-array reader depends on: the
  // first authenticated request threw away the optimized decode code (ours and apache-arrow's)
  // that the warm-up below had just built, and ran it slow again (seen with --trace-deopt).
  app.pmtape.keys.verify('pmt_000000000000_warm-up');
  const [markets, parquet] = await Promise.all([
    Promise.all(FAMILIES.map((f) => app.pmtape.markets.list(f).then((l) => l.length)))
      .then((n) => n.reduce((a, b) => a + b, 0))
      .catch((e: unknown) => void log.warn({ err: e }, 'could not build the markets index at start')),
    warmParquet(dataDir).catch((e: unknown) => void log.warn({ err: e }, 'could not warm the Parquet reader at start')),
  ]);
  // Then the replay's own code on the day just decoded (replay/warm-up.ts), `serve` only: `start`
  // warms in the background beside its recorders, and this takes a core for a while.
  const decoded = parquet?.decoded ?? null;
  const replayed =
    replay && decoded
      ? await warmReplay(app, dataDir, decoded).catch((e: unknown) => void log.warn({ err: e }, 'could not warm the replay at start'))
      : undefined;
  // And the dataset rows' read, which is the decoder alone.
  const rows =
    replay && decoded
      ? await warmDatasetRows(dataDir, decoded).catch((e: unknown) => void log.warn({ err: e }, 'could not warm the dataset rows at start'))
      : undefined;
  // The coverage list's spans (query/coverage.ts), from the markets just listed: its first page
  // would otherwise read them all (and compile the code that does).
  const coverage = await app.pmtape.coverage
    .warm(
      FAMILIES,
      (f) => app.pmtape.markets.list(f),
      (f, s, id) => app.pmtape.markets.reader(f, s, id),
    )
    .catch((e: unknown) => void log.warn({ err: e }, 'could not warm the coverage list at start'));
  // The markets view is a second old by now: re-read it so that the first requests find it fresh.
  if (replayed) {
    await Promise.all(FAMILIES.map((f) => app.pmtape.markets.rebuild(f))).catch(
      (e: unknown) => void log.warn({ err: e }, 'could not rebuild the markets index at start'),
    );
  }
  log.info({ ms: Math.round(performance.now() - t0), markets, parquet, replay: replayed, rows, coverage }, 'read side warmed');
}

export interface StartOptions extends Partial<AppOptions> {
  readonly logger?: false | FastifyBaseLogger;
  /**
   * When the read side is warmed: before listening (`serve`: `ready` means ready at speed), or in
   * the background once listening (`start`: its recorders start after the API listens, and a
   * restart must not lose capture to a warm-up).
   */
  readonly warmUp?: 'before-listen' | 'background';
}

/** Connection caps (connection-guard.ts); shedding is logged at most once a minute, with counts. */
function guardConnections(app: FastifyInstance, config: Config): ConnectionGuard {
  let lastWarn = 0;
  const guard = new ConnectionGuard(config.server, (what, address) => {
    const now = Date.now();
    if (now - lastWarn < 60_000) return;
    lastWarn = now;
    app.pmtape.log.warn(
      { ...guard.counts(), address, limits: config.server },
      what === 'shed'
        ? 'connection cap reached: closed the oldest idle connection (see docs/self-hosting.md, Connections)'
        : 'connection cap reached with every connection busy: refused a new one (see docs/self-hosting.md, Connections)',
    );
  });
  guard.attach(app.server);
  return guard;
}

export async function startApi(config: Config, opts: StartOptions = {}): Promise<ApiServer> {
  tuneGcForServing();
  const app = await buildApp({ ...opts, config });
  guardConnections(app, config);
  if (opts.warmUp !== 'background') await warmReadSide(app, config.dataDir, true);
  const address = await app.listen({ host: config.host, port: config.port });
  if (opts.warmUp === 'background') void warmReadSide(app, config.dataDir, false); // logs its own failures
  let closing: Promise<void> | null = null;
  return {
    app,
    url: address,
    close: () => (closing ??= app.close()),
  };
}
