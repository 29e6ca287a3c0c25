// A real SeaweedFS S3 server for the archive tests: `weed server -s3` on ports picked free first,
// a temp data dir, one access key; ready once it answers a ListBuckets, killed at teardown.

import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
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
  return (await freePorts(1))[0];
}

/**
 * `n` distinct free ports, all held open at once and then released together: chosen one at a time
 * (bind, close, bind again) the kernel may hand the same port out twice.
 */
export async function freePorts(n: number): Promise<number[]> {
  const servers = await Promise.all(Array.from({ length: n }, () => new Promise<Server>((res, rej) => {
    const srv = createServer();
    srv.once('error', rej);
    srv.listen(0, '127.0.0.1', () => res(srv));
  })));
  const ports = servers.map((srv) => (srv.address() as { port: number }).port);
  await Promise.all(servers.map((srv) => new Promise<void>((res) => srv.close(() => res()))));
  return ports;
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
  // A port picked free can still be taken by another process before weed binds it (tests start
  // several servers at once): weed then exits before it is ready, and is started again on new ports.
  for (let attempt = 1; ; attempt++) {
    const [m, v, f, s3, gm, gv, gf, gs] = await freePorts(8);
    const ports = { master: m, volume: v, filer: f, s3 };
    const grpc = { master: gm, volume: gv, filer: gf, s3: gs };
    const dir = mkdtempSync(join(tmpdir(), 'pmtape-weed-')); // each attempt from a clean state
    const started = await launch(t, bin, dir, ports, grpc, opts);
    if (started.ready) return started.weed;
    if (attempt >= 3 || !/address already in use|bind:/i.test(started.stderr)) {
      throw new Error(`weed did not become ready (exit ${started.exitCode}):\n${started.stderr}`);
    }
  }
}

interface Launch {
  readonly ready: boolean;
  readonly weed: Weed;
  readonly stderr: string;
  readonly exitCode: number | null;
}

type Ports = { master: number; volume: number; filer: number; s3: number };

async function launch(t: Test, bin: string, dir: string, ports: Ports, grpc: Ports, opts: { anonymousRead?: boolean }): Promise<Launch> {
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
  proc.stderr.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-8000)));
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
    rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
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
  if (!ok || proc.exitCode !== null) return { ready: false, weed: null as unknown as Weed, stderr, exitCode: proc.exitCode };
  const weed: Weed = {
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
  return { ready: true, weed, stderr, exitCode: null };
}
