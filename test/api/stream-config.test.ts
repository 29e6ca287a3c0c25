// The live stream takes its limits from the config (PMTAPE_STREAM_* read by src/config.ts), not
// from the process environment: a real server built from a config whose environment lowers the
// frame and subscription limits enforces them on a real socket.

import t from 'tap';
import { buildApp } from '../../src/api/app.js';
import { loadConfig } from '../../src/config.js';
import { makeKeys, tempDir, TestClient, writeCatalog, yesnoMarket } from './stream-helpers.js';

t.test('the stream enforces the limits the config read from PMTAPE_STREAM_*', async (t) => {
  const dataDir = tempDir(t);
  const keys = await makeKeys(dataDir);
  for (const ticker of ['KX-A', 'KX-B']) await writeCatalog(dataDir, yesnoMarket(ticker));
  const config = loadConfig(
    { dataDir, port: 0 },
    {
      PMTAPE_RATE_LIMITS: 'off',
      PMTAPE_STREAM_MAX_PAYLOAD_BYTES: '2048',
      PMTAPE_STREAM_MAX_SUBSCRIPTIONS: '1',
    },
  );
  t.equal(process.env.PMTAPE_STREAM_MAX_PAYLOAD_BYTES, undefined, 'the limit is not in the process environment');
  const app = await buildApp({ config, keyPollMs: 50, logger: false });
  await app.listen({ port: 0, host: '127.0.0.1' });
  t.teardown(() => app.close());
  const url = `ws://127.0.0.1:${(app.server.address() as { port: number }).port}/v3/stream`;

  // One subscription is allowed; the second is refused with an error naming the limit.
  const c = await TestClient.connect(t, url, keys.free);
  const sub = (id: number, market: string) => ({ op: 'subscribe', id, channel: 'book', family: 'yesno-exchange', ticker: market });
  c.send(sub(1, 'KX-A'));
  t.match(await c.waitFor((m) => m.id === 1), { type: 'subscribed' });
  c.send(sub(2, 'KX-B'));
  t.match(await c.waitFor((m) => m.id === 2), { type: 'error', error: { code: 'invalid_parameter', message: /at most 1 subscriptions/ } });

  // A frame above 2 KiB closes the connection with 1009 (message too big); the default is 64 KiB.
  const big = await TestClient.connect(t, url, keys.free);
  big.send({ ...sub(3, 'KX-C'), pad: 'x'.repeat(4096) });
  t.equal((await big.closed).code, 1009);
});
