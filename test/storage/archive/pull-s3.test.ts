// `pmtape pull s3://…` against a real SeaweedFS holding a day published by `archive sync`: the
// mirror equals the local Parquet files byte for byte, a rerun skips all, a public bucket is read
// without credentials, a staged half-download is resumed (only the rest crosses the network) unless
// the object changed, and an object that does not match its manifest's sha256 (or a manifest that
// does not match its day record) is refused.

import t from 'tap';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { HeadObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { requireTool } from '../../helpers/toolchains.js';
import { runCliOnce } from '../../selfhost/helpers.js';
import { startWeed, ACCESS_KEY, SECRET_KEY } from '../../../tools/fixtures/weed.js';
import { archiveCli, compactedDay, localObjects } from './common.js';

// Weed plus a dozen CLI runs: minutes on a busy 2-core machine.
t.setTimeout(600_000);
const bin = requireTool(t, 'seaweedfs');

const NO_AWS = {
  AWS_EC2_METADATA_DISABLED: 'true',
  AWS_CONFIG_FILE: '/nonexistent',
  AWS_SHARED_CREDENTIALS_FILE: '/nonexistent',
  AWS_PROFILE: '',
};
const WITH_KEYS = { ...NO_AWS, AWS_ACCESS_KEY_ID: ACCESS_KEY, AWS_SECRET_ACCESS_KEY: SECRET_KEY };
const ANONYMOUS = { ...NO_AWS, AWS_ACCESS_KEY_ID: '', AWS_SECRET_ACCESS_KEY: '' };

interface PullSummary {
  files: number;
  downloaded: number;
  skipped: number;
  bytes: number;
  failed: number;
}

async function pullS3(
  url: string,
  endpoint: string,
  out: string,
  env: NodeJS.ProcessEnv,
  extra: string[] = [],
): Promise<{ code: number | null; stdout: string; stderr: string; summary: PullSummary }> {
  const r = await runCliOnce(['pull', url, '--endpoint', endpoint, '--out', out, ...extra], { env, timeoutMs: 300_000 });
  let summary = {} as PullSummary;
  try {
    summary = JSON.parse(r.stdout.trim().split('\n').at(-1) ?? '') as PullSummary;
  } catch {
    // left empty: the assertions print stdout/stderr
  }
  return { ...r, summary };
}

/** Every file under `dir` (relative path → bytes), the sidecar cache left out. */
function tree(dir: string): Map<string, Buffer> {
  const out = new Map<string, Buffer>();
  const walk = (d: string): void => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name !== '.pmtape-pull.json') out.set(relative(dir, p), readFileSync(p));
    }
  };
  walk(dir);
  return out;
}

const sha = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

if (bin) {
  t.test('pull s3:// mirrors a published day, verified, resumable, skips unchanged, refuses a corrupt object', async (t) => {
    const weed = await startWeed(t, bin, { anonymousRead: true });
    await weed.createBucket('pmtape-pull');
    const url = 's3://pmtape-pull/tape';
    const dataDir = await compactedDay(t);
    const sync = await archiveCli(['sync'], dataDir, weed.endpoint, url);
    t.equal(sync.code, 0, sync.stderr);

    // What the mirror must hold: the data files (not manifests), at their path under parquet/.
    const want = new Map<string, Buffer>();
    for (const [k, b] of await localObjects(dataDir)) if (k.endsWith('.parquet')) want.set(k.replace(/^parquet\//, ''), b);
    const manifestSha = new Map<string, string>();
    for (const k of want.keys()) {
      const m = JSON.parse(readFileSync(join(dataDir, 'parquet', dirname(k), '_manifest.json'), 'utf8')) as {
        files: { file: string; sha256: string }[];
      };
      manifestSha.set(k, m.files.find((f) => k.endsWith(`/${f.file}`))!.sha256);
    }
    const total = [...want.values()].reduce((n, b) => n + b.length, 0);
    const scratch = mkdtempSync(join(tmpdir(), 'pmtape-pull-s3-'));
    t.teardown(() => rmSync(scratch, { recursive: true, force: true }));

    const out = join(scratch, 'signed');
    const first = await pullS3(url, weed.endpoint, out, WITH_KEYS);
    t.equal(first.code, 0, first.stderr);
    t.same(first.summary, { files: want.size, downloaded: want.size, skipped: 0, bytes: total, failed: 0 }, first.stdout);
    const got = tree(out);
    t.same([...got.keys()].sort(), [...want.keys()].sort(), 'the mirror has exactly the published data files');
    for (const [k, b] of want) {
      t.ok(got.get(k)?.equals(b), `${k} equals the recorder's file`);
      t.equal(sha(got.get(k)!), manifestSha.get(k), `${k} has its manifest's sha256`);
    }

    const again = await pullS3(url, weed.endpoint, out, WITH_KEYS);
    t.equal(again.code, 0, again.stderr);
    t.same(again.summary, { files: want.size, downloaded: 0, skipped: want.size, bytes: 0, failed: 0 }, 'a rerun skips every file');

    const filtered = await pullS3(url, weed.endpoint, join(scratch, 'filtered'), WITH_KEYS, ['--dataset', 'book_changes']);
    const changes = [...want.keys()].filter((k) => k.includes('/dataset=book_changes/'));
    t.ok(changes.length > 0, 'the fixture has book_changes');
    t.same(
      filtered.summary,
      { files: changes.length, downloaded: changes.length, skipped: 0, bytes: filtered.summary.bytes, failed: 0 },
      '--dataset filters the manifests',
    );

    // A public bucket: no credentials anywhere in the chain, requests go unsigned.
    const anon = await pullS3(url, weed.endpoint, join(scratch, 'anon'), ANONYMOUS);
    t.equal(anon.code, 0, anon.stderr);
    t.match(anon.stderr, /no AWS credentials found: reading s3:\/\/pmtape-pull\/tape anonymously/);
    t.same(anon.summary, { files: want.size, downloaded: want.size, skipped: 0, bytes: total, failed: 0 });

    // Resume: half of the largest file staged with the object's ETag: only the rest is fetched.
    const [big, bigBytes] = [...want].sort((a, b) => b[1].length - a[1].length)[0];
    const half = Math.floor(bigBytes.length / 2);
    const etag = (await weed.client.send(new HeadObjectCommand({ Bucket: 'pmtape-pull', Key: `tape/parquet/${big}` }))).ETag!;
    const stage = (dir: string, tag: string): void => {
      const part = join(dir, dirname(big), `_${big.split('/').at(-1)}.part`);
      mkdirSync(dirname(part), { recursive: true });
      writeFileSync(part, bigBytes.subarray(0, half));
      writeFileSync(`${part}.json`, JSON.stringify({ sha256: manifestSha.get(big), bytes: bigBytes.length, etag: tag }));
    };
    const resumed = join(scratch, 'resumed');
    stage(resumed, etag);
    const r = await pullS3(url, weed.endpoint, resumed, WITH_KEYS);
    t.equal(r.code, 0, r.stderr);
    t.equal(r.summary.bytes, total - half, 'only the missing half of the staged file crossed the network');
    t.ok(tree(resumed).get(big)?.equals(bigBytes), 'the resumed file is whole and right');
    const stale = join(scratch, 'stale');
    stage(stale, '"0123456789abcdef0123456789abcdef"');
    const s = await pullS3(url, weed.endpoint, stale, WITH_KEYS);
    t.equal(s.code, 0, s.stderr);
    t.equal(s.summary.bytes, total, 'a staged prefix of another version of the object is fetched again whole');
    t.ok(tree(stale).get(big)?.equals(bigBytes));

    // Same size, other bytes: the object no longer matches its manifest's sha256.
    const victim = [...want.keys()].find((k) => k.includes('/dataset=trades/')) ?? [...want.keys()][0];
    const bad = Buffer.from(want.get(victim)!);
    bad[Math.floor(bad.length / 2)] ^= 0xff;
    await weed.client.send(new PutObjectCommand({ Bucket: 'pmtape-pull', Key: `tape/parquet/${victim}`, Body: bad }));
    const corrupt = join(scratch, 'corrupt');
    const c = await pullS3(url, weed.endpoint, corrupt, WITH_KEYS);
    t.equal(c.code, 1, 'exit 1 when a file failed');
    t.match(c.summary, { files: want.size, downloaded: want.size - 1, failed: 1 }, c.stdout);
    t.match(c.stderr, new RegExp(`failed ${victim.replace(/[.]/g, '\\.')}: sha256 mismatch`));
    t.notOk(existsSync(join(corrupt, victim)), 'the corrupt object is not published into the mirror');
    t.notOk(existsSync(join(corrupt, dirname(victim), `_${victim.split('/').at(-1)}.part`)), 'nor left staged');
    // The earlier mirror keeps its good copy: a rerun does not replace it with the corrupt one.
    const keep = await pullS3(url, weed.endpoint, out, WITH_KEYS, ['--rehash']);
    t.match(keep.summary, { skipped: want.size, failed: 0 }, 'a verified local copy is kept (it still matches the manifest)');

    // A manifest that is not the one its day record names: the listing is refused, nothing fetched.
    const mKey = `tape/parquet/${dirname(victim)}/_manifest.json`;
    const manifest = readFileSync(join(dataDir, 'parquet', dirname(victim), '_manifest.json'));
    await weed.client.send(new PutObjectCommand({ Bucket: 'pmtape-pull', Key: mKey, Body: Buffer.concat([manifest, Buffer.from(' ')]) }));
    const forged = await pullS3(url, weed.endpoint, join(scratch, 'forged'), WITH_KEYS);
    t.equal(forged.code, 1);
    t.match(forged.stderr, /_manifest\.json does not match the sha256 its day record .* names/);
    t.same(forged.summary, { files: 0, downloaded: 0, skipped: 0, bytes: 0, failed: 0 });
  });

  t.test('pull s3:// refusals: bad URL, bad endpoint, --endpoint with http, no such bucket, refused keys', async (t) => {
    const weed = await startWeed(t, bin);
    const out = mkdtempSync(join(tmpdir(), 'pmtape-pull-s3-'));
    t.teardown(() => rmSync(out, { recursive: true, force: true }));
    const badUrl = await runCliOnce(['pull', 's3://X', '--out', out], { env: WITH_KEYS });
    t.equal(badUrl.code, 2);
    t.match(badUrl.stderr, /<url> has bucket "X"/);
    const badEndpoint = await runCliOnce(['pull', 's3://pmtape-x/p', '--endpoint', 'ftp://x', '--out', out], { env: WITH_KEYS });
    t.equal(badEndpoint.code, 2);
    t.match(badEndpoint.stderr, /--endpoint must be an http\(s\):\/\/ URL/);
    const mixed = await runCliOnce(['pull', 'http://127.0.0.1:1', '--endpoint', weed.endpoint, '--out', out], { env: WITH_KEYS });
    t.equal(mixed.code, 2);
    t.match(mixed.stderr, /--endpoint is for s3:\/\/ URLs/);
    const noBucket = await pullS3('s3://pmtape-none/p', weed.endpoint, out, WITH_KEYS);
    t.equal(noBucket.code, 1);
    t.match(noBucket.stderr, /bucket "pmtape-none" does not exist/);
    t.same(noBucket.summary, { files: 0, downloaded: 0, skipped: 0, bytes: 0, failed: 0 });
    const refused = await pullS3('s3://pmtape-none/p', weed.endpoint, out, {
      ...NO_AWS,
      AWS_ACCESS_KEY_ID: 'nobody',
      AWS_SECRET_ACCESS_KEY: 'wrongwrongwrong',
    });
    t.equal(refused.code, 1);
    t.match(refused.stderr, /credentials were refused|does not exist|Access ?Denied/i);
  });
}
