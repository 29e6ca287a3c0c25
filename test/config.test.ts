// The one config loader: PMTAPE_* variables are read here and nowhere else, flags win over the
// environment, and a bad value is refused with the variable's name.

import t from 'tap';
import { DEFAULT_STREAM_TUNING, loadConfig } from '../src/config.js';

t.test('stream tuning comes from PMTAPE_STREAM_* over the defaults', async (t) => {
  t.same(loadConfig({ dataDir: '/tmp/x' }, {}).stream, DEFAULT_STREAM_TUNING, 'no variables: the defaults');
  const c = loadConfig({ dataDir: '/tmp/x' }, { PMTAPE_STREAM_PING_MS: '250', PMTAPE_STREAM_MAX_SUBSCRIPTIONS: '7', PMTAPE_STREAM_CLOSE_GRACE_MS: '' });
  t.equal(c.stream.pingIntervalMs, 250);
  t.equal(c.stream.maxSubscriptions, 7);
  t.equal(c.stream.closeGraceMs, DEFAULT_STREAM_TUNING.closeGraceMs, 'an empty variable counts as unset');
  t.ok(Object.isFrozen(c.stream), 'frozen like the rest of the config');
});

t.test('a stream variable that is not a positive number is refused by name', async (t) => {
  for (const bad of ['0', '-5', 'fast', 'Infinity']) {
    t.throws(() => loadConfig({ dataDir: '/tmp/x' }, { PMTAPE_STREAM_MAX_BUFFERED_BYTES: bad }),
      { name: 'ConfigError', message: /PMTAPE_STREAM_MAX_BUFFERED_BYTES must be a positive number/ }, bad);
  }
});

t.test('flags win over the environment, the environment over defaults', async (t) => {
  const c = loadConfig({ dataDir: '/tmp/flag', port: 9 }, { PMTAPE_DATA_DIR: '/tmp/env', PMTAPE_PORT: '7', PMTAPE_HOST: '0.0.0.0' });
  t.equal(c.dataDir, '/tmp/flag');
  t.equal(c.port, 9);
  t.equal(c.host, '0.0.0.0');
  t.equal(loadConfig({}, { PMTAPE_DATA_DIR: '/tmp/env' }).dataDir, '/tmp/env');
});

t.test('storage.compaction_threads: 1 or 2 from the config file, null when unset; anything else is refused by name', async (t) => {
  const { mkdtemp, writeFile, rm } = await import('node:fs/promises');
  const { tmpdir } = await import('node:os');
  const { join } = await import('node:path');
  const dir = await mkdtemp(join(tmpdir(), 'pmtape-config-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const file = join(dir, 'config.json');
  const load = async (storage: unknown) => {
    await writeFile(file, JSON.stringify({ storage }));
    return loadConfig({ dataDir: dir, config: file }, {});
  };
  t.equal((await load({})).storage.compactionThreads, null, 'unset: each command decides (compact 2, start 1)');
  t.equal((await load({ compaction_threads: 2 })).storage.compactionThreads, 2);
  t.equal((await load({ compaction_threads: 1 })).storage.compactionThreads, 1);
  for (const bad of [0, 3, '2', 1.5]) {
    await t.rejects(load({ compaction_threads: bad }), { name: 'ConfigError', message: /storage\.compaction_threads must be 1 or 2/ }, JSON.stringify(bad));
  }
});

t.test('PMTAPE_GC_METRICS: off unless switched on; anything but on/off is refused by name', async (t) => {
  t.equal(loadConfig({ dataDir: '/tmp/x' }, {}).gcMetrics, false, 'unset: off');
  t.equal(loadConfig({ dataDir: '/tmp/x' }, { PMTAPE_GC_METRICS: '' }).gcMetrics, false, 'empty: off');
  for (const on of ['on', 'ON', '1', 'true']) t.equal(loadConfig({ dataDir: '/tmp/x' }, { PMTAPE_GC_METRICS: on }).gcMetrics, true, on);
  for (const off of ['off', '0', 'false']) t.equal(loadConfig({ dataDir: '/tmp/x' }, { PMTAPE_GC_METRICS: off }).gcMetrics, false, off);
  t.throws(() => loadConfig({ dataDir: '/tmp/x' }, { PMTAPE_GC_METRICS: 'yes please' }),
    { name: 'ConfigError', message: /PMTAPE_GC_METRICS must be on or off/ });
});
