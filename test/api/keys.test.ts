// The key store: concurrent creates never lose a key, only hashes are stored, revoked and unknown
// keys fail verification, a damaged key file is reported instead of silently emptied, and a running
// KeyStore follows changes made by other processes.

import t from 'tap';
import { readFileSync, writeFileSync } from 'node:fs';
import { createKey, KeyStore, keysPath, listKeys, revokeKey } from '../../src/api/plugins/keys.js';
import { tmpDataDir } from './helpers.js';

t.test('concurrent creates all land, and verification follows revocation', async (t) => {
  const dir = tmpDataDir(t);
  const made = await Promise.all(Array.from({ length: 12 }, (_, i) => createKey(dir, i % 2 ? 'paid' : 'free', `k${i}`)));
  const listed = await listKeys(dir);
  t.equal(listed.length, 12, 'no create lost under concurrency');
  const text = readFileSync(keysPath(dir), 'utf8');
  for (const m of made) t.notOk(text.includes(m.key.slice(17)), 'secrets are never stored');
  const store = new KeyStore(dir, 20);
  await store.start();
  t.teardown(() => store.stop());
  t.equal(store.verify(made[1].key)?.plan, 'paid');
  t.equal(store.verify(made[0].key)?.plan, 'free');
  t.equal(store.verify('pmt_000000000000_' + 'A'.repeat(43)), null, 'unknown id');
  t.equal(store.verify('not a key'), null);
  t.equal(store.verify(made[0].key.slice(0, -1) + (made[0].key.endsWith('A') ? 'B' : 'A')), null, 'one character off');
  t.ok(await revokeKey(dir, made[1].record.id));
  t.notOk(await revokeKey(dir, 'nosuchid'));
  let after = store.verify(made[1].key);
  for (let i = 0; i < 100 && after; i++) {
    await new Promise((r) => setTimeout(r, 20));
    after = store.verify(made[1].key);
  }
  t.equal(after, null, 'the running store saw the revocation');
  t.ok(store.verify(made[3].key), 'other keys still work');
  const more = await createKey(dir, 'free', 'late');
  let late = store.verify(more.key);
  for (let i = 0; i < 100 && !late; i++) {
    await new Promise((r) => setTimeout(r, 20));
    late = store.verify(more.key);
  }
  t.ok(late, 'the running store saw the new key');
});

t.test('a damaged key file is an error that names the file, and the running store keeps its view', async (t) => {
  const dir = tmpDataDir(t);
  const k = await createKey(dir, 'free', 'x');
  const store = new KeyStore(dir, 20);
  await store.start();
  t.teardown(() => store.stop());
  writeFileSync(keysPath(dir), '{"keys": [trunc');
  await t.rejects(listKeys(dir), /keys\.json is damaged/);
  await t.rejects(store.reload(), /damaged/);
  t.ok(store.verify(k.key), 'the previous view stays in force');
  await t.rejects(new KeyStore(dir).start(), /damaged/, 'a server does not start on a damaged key file');
});

t.test('a key verified once is remembered only until the key file changes', async (t) => {
  const dir = tmpDataDir(t);
  const a = await createKey(dir, 'free', 'a');
  const store = new KeyStore(dir, 60_000); // no polling: reloads happen when this test asks
  await store.start();
  t.teardown(() => store.stop());
  t.equal(store.verify(a.key)?.id, a.record.id);
  t.equal(store.verify(a.key)?.id, a.record.id, 'again (remembered)');
  t.equal(store.verify(a.key.slice(0, -1) + (a.key.endsWith('A') ? 'B' : 'A')), null, 'a near miss is still refused');
  await revokeKey(dir, a.record.id);
  await store.reload();
  t.equal(store.verify(a.key), null, 'after the reload the revoked key is refused');
});
