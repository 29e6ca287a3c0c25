// What the engine tests share (engines.test.ts, spark.test.ts): a compacted fixture day published
// to a fresh SeaweedFS bucket, and one run of test/storage/archive/engines_read.py in the venv.

import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { Test } from 'tap';
import { REPO } from '../../selfhost/helpers.js';
import { startWeed, ACCESS_KEY, SECRET_KEY } from '../../../tools/fixtures/weed.js';
import { archiveCli, compactedDay } from './common.js';

const SCRIPT = join(REPO, 'test', 'storage', 'archive', 'engines_read.py');
export const BUCKET = 'pmtape-engines';
export const PREFIX = 'tape';

/** Starts weed, publishes a compacted fixture day; returns the data dir and the endpoint. */
export async function publishedDay(t: Test, bin: string): Promise<{ dataDir: string; endpoint: string }> {
  const weed = await startWeed(t, bin);
  await weed.createBucket(BUCKET);
  const dataDir = await compactedDay(t);
  const sync = await archiveCli(['sync'], dataDir, weed.endpoint, `s3://${BUCKET}/${PREFIX}`);
  t.equal(sync.code, 0, sync.stderr);
  return { dataDir, endpoint: weed.endpoint };
}

/** Runs one engine of engines_read.py with the test keys; its last stdout line, parsed. */
export async function engine(py: string, args: string[]): Promise<any> {
  const env = {
    ...process.env,
    AWS_ACCESS_KEY_ID: ACCESS_KEY,
    AWS_SECRET_ACCESS_KEY: SECRET_KEY,
    AWS_EC2_METADATA_DISABLED: 'true',
    PYSPARK_PYTHON: py,
  };
  try {
    const { stdout } = await promisify(execFile)(py, [SCRIPT, ...args], { env, maxBuffer: 64e6, timeout: 900_000 });
    return JSON.parse(stdout.trim().split('\n').at(-1)!);
  } catch (e) {
    const x = e as { stderr?: string; message: string };
    throw new Error(`${args[0]} failed: ${x.message}\n${(x.stderr ?? '').slice(-4000)}`);
  }
}
