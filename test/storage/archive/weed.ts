// A real SeaweedFS S3 server for the archive tests: `weed server -s3` on ports picked free first,
// a temp data dir, one access key; ready once it answers a ListBuckets, killed at teardown.

import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CreateBucketCommand, ListBucketsCommand, S3Client } from '@aws-sdk/client-s3';
import type { Test } from 'tap';
import { waitFor } from '../../selfhost/helpers.js';

export const ACCESS_KEY = 'pmtapetestkey';
export const SECRET_KEY = 'pmtapetestsecret0123456789';

/** The env a pmtape child needs to reach the archive (credentials through the SDK's env chain). */
export function archiveEnv(endpoint: string, url: string): NodeJS.ProcessEnv {
  return {
    PMTAPE_ARCHIVE_URL: url,
    PMTAPE_ARCHIVE_ENDPOINT: endpoint,
    AWS_ACCESS_KEY_ID: ACCESS_KEY,
    AWS_SECRET_ACCESS_KEY: SECRET_KEY,
    AWS_EC2_METADATA_DISABLED: 'true',
    AWS_CONFIG_FILE: '/nonexistent',
    AWS_SHARED_CREDENTIALS_FILE: '/nonexistent',
  };
}

export async function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const s = createServer();
    s.once('error', rej);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => res(port));
    });
  });
}

/** A client of the test server (no retries of its own beyond the SDK's default). */
export function testClient(endpoint: string): S3Client {
  return new S3Client({
    region: 'us-east-1', endpoint, forcePathStyle: true,
    credentials: { accessKeyId: ACCESS_KEY, secretAccessKey: SECRET_KEY },
    requestChecksumCalculation: 'WHEN_REQUIRED', responseChecksumValidation: 'WHEN_REQUIRED',
  });
}

export interface Weed {
  readonly endpoint: string;
  readonly client: S3Client;
  createBucket(name: string): Promise<void>;
}

/** `anonymousRead`: requests without credentials may read and list (a public bucket). */
export async function startWeed(t: Test, bin: string, opts: { anonymousRead?: boolean } = {}): Promise<Weed> {
  const dir = mkdtempSync(join(tmpdir(), 'pmtape-weed-'));
  const ports = { master: await freePort(), volume: await freePort(), filer: await freePort(), s3: await freePort() };
  const grpc = { master: await freePort(), volume: await freePort(), filer: await freePort(), s3: await freePort() };
  const config = join(dir, 's3.json');
  writeFileSync(config, JSON.stringify({
    identities: [
      { name: 'pmtape-test', credentials: [{ accessKey: ACCESS_KEY, secretKey: SECRET_KEY }], actions: ['Admin', 'Read', 'List', 'Tagging', 'Write'] },
      ...(opts.anonymousRead ? [{ name: 'anonymous', actions: ['Read', 'List'] }] : []),
    ],
  }));
  const args = [
    `-logdir=${dir}`, 'server', `-dir=${dir}`, '-ip=127.0.0.1', '-ip.bind=127.0.0.1',
    `-master.port=${ports.master}`, `-master.port.grpc=${grpc.master}`, '-master.volumeSizeLimitMB=64',
    `-volume.port=${ports.volume}`, `-volume.port.grpc=${grpc.volume}`, '-volume.max=20',
    '-filer', `-filer.port=${ports.filer}`, `-filer.port.grpc=${grpc.filer}`,
    '-s3', `-s3.port=${ports.s3}`, `-s3.port.grpc=${grpc.s3}`, `-s3.config=${config}`,
    // Side services with fixed default ports would collide between tests running at once: off.
    '-s3.port.iceberg=0', '-s3.port.lance=0', '-metricsPort=0',
    `-filer.localSocket=${join(dir, 'filer.sock')}`, `-s3.localSocket=${join(dir, 's3.sock')}`,
  ];
  const proc = spawn(bin, args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'], detached: true });
  let stderr = '';
  proc.stderr!.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-8000)));
  const exited = new Promise<void>((res) => proc.on('exit', () => res()));
  t.teardown(async () => {
    if (proc.exitCode === null && proc.signalCode === null) {
      try {
        process.kill(-proc.pid!, 'SIGKILL');
      } catch {
        proc.kill('SIGKILL');
      }
      await exited;
    }
    rmSync(dir, { recursive: true, force: true });
    // weed puts its gRPC sockets in /tmp whatever the flags say.
    for (const p of Object.values(grpc)) for (const k of ['master', 'volume', 'filer', 's3']) rmSync(`/tmp/seaweedfs-${k}-grpc-${p}.sock`, { force: true });
  });
  const endpoint = `http://127.0.0.1:${ports.s3}`;
  const client = testClient(endpoint);
  t.teardown(() => client.destroy());
  // Ready: the S3 gateway answers an authenticated request (the filer and a volume are up behind it).
  const ok = await waitFor(async () => {
    if (proc.exitCode !== null) return true;
    return client.send(new ListBucketsCommand({})).then(() => true, () => false);
  }, 120_000, 250);
  if (!ok || proc.exitCode !== null) throw new Error(`weed did not become ready (exit ${proc.exitCode}):\n${stderr}`);
  return {
    endpoint,
    client,
    async createBucket(name) {
      await client.send(new CreateBucketCommand({ Bucket: name }));
      // A first write needs a volume: wait until one is assigned and a put succeeds.
      await waitFor(async () => {
        const { PutObjectCommand, DeleteObjectCommand } = await import('@aws-sdk/client-s3');
        try {
          await client.send(new PutObjectCommand({ Bucket: name, Key: '_probe', Body: 'x' }));
          await client.send(new DeleteObjectCommand({ Bucket: name, Key: '_probe' }));
          return true;
        } catch {
          return false;
        }
      }, 120_000, 250);
    },
  };
}
