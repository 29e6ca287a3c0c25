// The one config loader: PMTAPE_* variables are read here and nowhere else, flags win over the
// environment, and a bad value is refused with the variable's name.

import t from 'tap';
import { join } from 'node:path';
import { DEFAULT_STREAM_TUNING, loadConfig } from '../src/config.js';
import { publishTarget } from '../src/storage/index.js';

t.test('stream tuning comes from PMTAPE_STREAM_* over the defaults', async (t) => {
  t.same(loadConfig({ dataDir: '/tmp/x' }, {}).stream, DEFAULT_STREAM_TUNING, 'no variables: the defaults');
  const c = loadConfig(
    { dataDir: '/tmp/x' },
    { PMTAPE_STREAM_PING_MS: '250', PMTAPE_STREAM_MAX_SUBSCRIPTIONS: '7', PMTAPE_STREAM_CLOSE_GRACE_MS: '' },
  );
  t.equal(c.stream.pingIntervalMs, 250);
  t.equal(c.stream.maxSubscriptions, 7);
  t.equal(c.stream.closeGraceMs, DEFAULT_STREAM_TUNING.closeGraceMs, 'an empty variable counts as unset');
  t.ok(Object.isFrozen(c.stream), 'frozen like the rest of the config');
});

t.test('a stream variable that is not a positive number is refused by name', async (t) => {
  for (const bad of ['0', '-5', 'fast', 'Infinity']) {
    t.throws(
      () => loadConfig({ dataDir: '/tmp/x' }, { PMTAPE_STREAM_MAX_BUFFERED_BYTES: bad }),
      { name: 'ConfigError', message: /PMTAPE_STREAM_MAX_BUFFERED_BYTES must be a positive number/ },
      bad,
    );
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
    await t.rejects(
      load({ compaction_threads: bad }),
      { name: 'ConfigError', message: /storage\.compaction_threads must be 1 or 2/ },
      JSON.stringify(bad),
    );
  }
});

t.test('PMTAPE_GC_METRICS: off unless switched on; anything but on/off is refused by name', async (t) => {
  t.equal(loadConfig({ dataDir: '/tmp/x' }, {}).gcMetrics, false, 'unset: off');
  t.equal(loadConfig({ dataDir: '/tmp/x' }, { PMTAPE_GC_METRICS: '' }).gcMetrics, false, 'empty: off');
  for (const on of ['on', 'ON', '1', 'true']) t.equal(loadConfig({ dataDir: '/tmp/x' }, { PMTAPE_GC_METRICS: on }).gcMetrics, true, on);
  for (const off of ['off', '0', 'false']) t.equal(loadConfig({ dataDir: '/tmp/x' }, { PMTAPE_GC_METRICS: off }).gcMetrics, false, off);
  t.throws(() => loadConfig({ dataDir: '/tmp/x' }, { PMTAPE_GC_METRICS: 'yes please' }), {
    name: 'ConfigError',
    message: /PMTAPE_GC_METRICS must be on or off/,
  });
});

t.test('PMTAPE_LOG_LEVEL: one of pino levels; anything else is refused naming the variable and the levels', async (t) => {
  t.equal(loadConfig({ dataDir: '/tmp/x' }, {}).logLevel, 'info', 'unset: info');
  t.equal(loadConfig({ dataDir: '/tmp/x' }, { PMTAPE_LOG_LEVEL: 'warn' }).logLevel, 'warn');
  t.equal(loadConfig({ dataDir: '/tmp/x' }, { PMTAPE_LOG_LEVEL: 'silent' }).logLevel, 'silent');
  t.throws(() => loadConfig({ dataDir: '/tmp/x' }, { PMTAPE_LOG_LEVEL: 'loud' }), {
    name: 'ConfigError',
    message: /PMTAPE_LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent, got "loud"/,
  });
  t.throws(
    () => loadConfig({ dataDir: '/tmp/x', logLevel: 'loud' }, { PMTAPE_LOG_LEVEL: 'warn' }),
    { message: /--log-level must be one of/ },
    'a flag is named as the flag',
  );
});

t.test('PMTAPE_RATE_LIMITS: a zero count or window is refused naming the variable, the form and off', async (t) => {
  for (const bad of ['free=0/m', 'free=60/m,paid=0/h', 'paid=5/0m', 'free=00/s']) {
    t.throws(
      () => loadConfig({ dataDir: '/tmp/x' }, { PMTAPE_RATE_LIMITS: bad }),
      {
        name: 'ConfigError',
        message:
          /PMTAPE_RATE_LIMITS has ".*"; the count and window must be at least 1 \(form PLAN=COUNT\/\[N\]s\|m\|h.*use off to disable limits\)/,
      },
      bad,
    );
  }
  t.throws(
    () => loadConfig({ dataDir: '/tmp/x' }, { PMTAPE_RATE_LIMITS: 'free=-1/m' }),
    { message: /PMTAPE_RATE_LIMITS/ },
    'negative: not the form',
  );
  t.equal(loadConfig({ dataDir: '/tmp/x' }, { PMTAPE_RATE_LIMITS: 'off' }).rateLimits, null, 'off still disables');
  t.same(loadConfig({ dataDir: '/tmp/x' }, { PMTAPE_RATE_LIMITS: 'free=1/10s' }).rateLimits?.free, { max: 1, windowMs: 10_000 });
});

t.test('a deeply nested config file is refused naming the file and the field, never a stack overflow', async (t) => {
  const { mkdtemp, writeFile, rm } = await import('node:fs/promises');
  const { tmpdir } = await import('node:os');
  const dir = await mkdtemp(join(tmpdir(), 'pmtape-config-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const file = join(dir, 'deep.json');
  // coins' validator quotes the bad value, which recursed through 100 000 levels before.
  for (const text of [
    `{"coins":[${'['.repeat(100_000)}${']'.repeat(100_000)}]}`,
    `{"recorders":${'{"a":'.repeat(100_000)}1${'}'.repeat(100_000)}}`,
  ]) {
    await writeFile(file, text);
    t.throws(() => loadConfig({ dataDir: dir, config: file }, {}), {
      name: 'ConfigError',
      message: new RegExp(`config: ${file} nests deeper than 16 levels \\(at (coins|recorders)`),
    });
  }
  await writeFile(file, JSON.stringify({ upstreams: { clob: { rest: 'http://x' } }, storage: { retention_days: 1 } }));
  t.equal(loadConfig({ dataDir: dir, config: file }, {}).upstreams.clob.rest, 'http://x', 'a real config still loads');
});

t.test('storage.archive: parsed from the file, PMTAPE_ARCHIVE_URL/_ENDPOINT win, mistakes refused by name', async (t) => {
  const { mkdtemp, writeFile, rm } = await import('node:fs/promises');
  const { tmpdir } = await import('node:os');
  const dir = await mkdtemp(join(tmpdir(), 'pmtape-config-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const file = join(dir, 'config.json');
  const load = async (storage: unknown, env: NodeJS.ProcessEnv = {}) => {
    await writeFile(file, JSON.stringify({ storage }));
    return loadConfig({ dataDir: dir, config: file }, env);
  };
  t.equal((await load({})).storage.archive, null, 'no archive unless configured');
  const aws = (await load({ archive: { url: 's3://my-archive/pm/tape/' } })).storage.archive!;
  t.same(
    aws,
    {
      url: 's3://my-archive/pm/tape',
      bucket: 'my-archive',
      prefix: 'pm/tape',
      endpoint: null,
      region: 'us-east-1',
      pathStyle: false,
      maxLagDays: 2,
      recorderId: null,
    },
    'AWS defaults: us-east-1, virtual-hosted style, lag 2 days',
  );
  const r2 = await load({
    archive: { url: 's3://b-1', endpoint: 'https://acct.r2.cloudflarestorage.com/', region: 'auto', max_lag_days: 5 },
    archive_cache_bytes: 1000,
  });
  t.match(r2.storage.archive, {
    bucket: 'b-1',
    prefix: '',
    endpoint: 'https://acct.r2.cloudflarestorage.com',
    region: 'auto',
    pathStyle: true,
    maxLagDays: 5,
  });
  t.equal(r2.storage.archiveCacheBytes, 1000);
  const env = (
    await load(
      { archive: { url: 's3://file-bucket/x', path_style: false } },
      { PMTAPE_ARCHIVE_URL: 's3://env-bucket/y', PMTAPE_ARCHIVE_ENDPOINT: 'http://127.0.0.1:9000' },
    )
  ).storage.archive!;
  t.match(
    env,
    { bucket: 'env-bucket', prefix: 'y', endpoint: 'http://127.0.0.1:9000', pathStyle: false },
    'the environment overrides the file',
  );
  t.match(loadConfig({ dataDir: dir }, { PMTAPE_ARCHIVE_URL: 's3://only-env' }).storage.archive, { bucket: 'only-env', endpoint: null });
  const refused: [unknown, NodeJS.ProcessEnv, RegExp][] = [
    [{ archive: { url: 'http://bucket/x' } }, {}, /storage\.archive\.url must look like s3:\/\/<bucket>\/<prefix>/],
    [{ archive: { url: 's3://Bad_Bucket/x' } }, {}, /storage\.archive\.url has bucket "Bad_Bucket"/],
    [{ archive: { url: 's3://bucket/a/../b' } }, {}, /storage\.archive\.url must look like/],
    [{ archive: { endpoint: 'http://x' } }, {}, /storage\.archive\.url is missing/],
    [{ archive: { url: 's3://bucket', secret_key: 'x' } }, {}, /storage\.archive\.secret_key is not a known field/],
    [{ archive: { url: 's3://bucket', endpoint: 'ftp://x' } }, {}, /storage\.archive\.endpoint must be an http\(s\):\/\/ URL/],
    [{ archive: { url: 's3://bucket', path_style: 'yes' } }, {}, /storage\.archive\.path_style must be true or false/],
    [{ archive: { url: 's3://bucket', max_lag_days: -1 } }, {}, /storage\.archive\.max_lag_days must be a number ≥ 0/],
    [{}, { PMTAPE_ARCHIVE_ENDPOINT: 'http://x:1' }, /PMTAPE_ARCHIVE_ENDPOINT is set but no archive is/],
    [{}, { PMTAPE_ARCHIVE_URL: 's3:/bucket' }, /PMTAPE_ARCHIVE_URL must look like s3:\/\//],
    [
      { archive: { url: 's3://bucket' } },
      { PMTAPE_ARCHIVE_ENDPOINT: 'not a url' },
      /PMTAPE_ARCHIVE_ENDPOINT must be an http\(s\):\/\/ URL/,
    ],
    [{ archive: { url: 's3://bucket', recorder_id: '../b' } }, {}, /storage\.archive\.recorder_id must be 1-64 letters, digits/],
    [{ archive: { url: 's3://bucket', recorder_id: 7 } }, {}, /storage\.archive\.recorder_id must be/],
    [{ archive: { url: 's3://bucket' } }, { PMTAPE_RECORDER_ID: 'a/b' }, /PMTAPE_RECORDER_ID must be 1-64 letters/],
    [{}, { PMTAPE_RECORDER_ID: 'rec-a' }, /PMTAPE_RECORDER_ID is set but no archive is/],
  ];
  for (const [storage, e, re] of refused)
    await t.rejects(load(storage, e), { name: 'ConfigError', message: re }, JSON.stringify([storage, e]));
  // A recorder id (a shared archive): its days are published under recorders/<id>/.
  const shared = (await load({ archive: { url: 's3://bucket/pm', recorder_id: 'rec-a' } })).storage.archive!;
  t.equal(shared.recorderId, 'rec-a');
  t.match(publishTarget(shared), { url: 's3://bucket/pm/recorders/rec-a', prefix: 'pm/recorders/rec-a', recorderId: null });
  t.equal(
    (await load({ archive: { url: 's3://bucket', recorder_id: 'x' } }, { PMTAPE_RECORDER_ID: 'rec_b' })).storage.archive!.recorderId,
    'rec_b',
    'the variable wins',
  );
  t.match(publishTarget((await load({ archive: { url: 's3://bucket', recorder_id: 'x' } })).storage.archive!), {
    url: 's3://bucket/recorders/x',
    prefix: 'recorders/x',
  });
  t.equal(publishTarget(aws), aws, 'without an id: the archive itself');
});
