// The first-start key and the demo key, on a real key file: exactly one paid key on an empty data
// dir, none once any key exists (revoked ones too), and each demo run replaces the previous demo key.

import t from 'tap';
import { readFileSync } from 'node:fs';
import { PassThrough } from 'node:stream';
import { announceFirstKey, demoKey, ensureFirstKey } from '../../src/api/plugins/first-key.js';
import { KeyStore, createKey, listKeys, revokeKey } from '../../src/api/plugins/keys.js';
import { tempDir } from './helpers.js';

t.test('an empty data dir gets one paid key, printed once with how to make more', async (t) => {
  const dir = tempDir(t);
  const out = new PassThrough();
  let text = '';
  out.on('data', (d: Buffer) => (text += d.toString()));
  const k = await announceFirstKey(dir, out);
  t.ok(k, 'a key was created');
  t.match(text, new RegExp(`^key ${k!.key}$`, 'm'), 'the key is printed alone on a "key " line');
  t.match(text, /keys create --plan/, 'with the command that makes more');
  const store = new KeyStore(dir);
  await store.reload();
  t.equal(store.verify(k!.key)?.plan, 'paid', 'the printed key is a working paid key');
  t.notOk(readFileSync(`${dir}/keys/keys.json`, 'utf8').includes(k!.key), 'the secret itself is not stored');

  text = '';
  t.equal(await announceFirstKey(dir, out), null, 'a second start creates nothing');
  t.equal(text, '', 'and prints nothing');
  t.equal((await listKeys(dir)).length, 1, 'still exactly one key');
});

t.test('a data dir whose keys were all revoked gets no surprise key', async (t) => {
  const dir = tempDir(t);
  const { record } = await createKey(dir, 'free', 'old');
  await revokeKey(dir, record.id);
  t.equal(await ensureFirstKey(dir), null, 'the operator revoked everything on purpose');
});

t.test('each demo run revokes the previous demo key and makes a new one', async (t) => {
  const dir = tempDir(t);
  const { key: other } = await createKey(dir, 'free', 'alice');
  const a = await demoKey(dir);
  const b = await demoKey(dir);
  t.not(a.key, b.key, 'a fresh key each run');
  const store = new KeyStore(dir);
  await store.reload();
  t.equal(store.verify(a.key), null, 'the previous demo key no longer works');
  t.equal(store.verify(b.key)?.plan, 'paid', 'the new one is paid');
  t.equal(store.verify(other)?.name, 'alice', 'other keys are untouched');
});
