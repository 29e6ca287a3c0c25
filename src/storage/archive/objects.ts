// One object of the archive: written with its sha256 in the metadata, then proven to hold exactly
// the local bytes, by its ETag (the MD5 of a single PUT, or of the parts' MD5s for a multipart
// upload of known part size) or, where a store computes ETags otherwise, by reading it back.

import { createHash, type Hash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { Transform, type Readable } from 'node:stream';
import {
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  PutObjectCommand,
  type GetObjectCommandOutput,
  type S3Client,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';

/** Part size of multipart uploads; fixed so the expected multipart ETag can be computed locally. */
export const PART_SIZE = 8 * 1024 * 1024;

export interface LocalObject {
  readonly key: string;
  /** A file to stream, or bytes in memory (manifests). */
  readonly path?: string;
  readonly body?: Uint8Array;
  readonly size: number;
  readonly sha256: string;
  /**
   * ETags this content may have: the single-PUT MD5 and the multipart one at PART_SIZE. Absent for
   * a file known only by its manifest (sha256, size): `upload` then hashes it while sending it.
   */
  readonly etags?: readonly string[];
  readonly contentType: string;
}

/**
 * sha256, size and the possible ETags of bytes arriving in chunks. One MD5 pass serves both ETags
 * while the bytes fit one part (the part's MD5 is the whole MD5); past the first part, the whole MD5
 * continues from a copy of the first part's state, and only when `whole` asks for it: an upload
 * past PART_SIZE is multipart, so its ETag is the parts' one and the whole MD5 would be a wasted pass.
 */
export class Digest {
  private readonly sha = createHash('sha256');
  private whole: Hash | null = null;
  private readonly parts: Buffer[] = [];
  private part = createHash('md5');
  private inPart = 0;
  size = 0;

  constructor(private readonly wantWhole = true) {}

  update(chunk: Uint8Array): void {
    this.sha.update(chunk);
    this.size += chunk.length;
    let off = 0;
    while (off < chunk.length) {
      const n = Math.min(chunk.length - off, PART_SIZE - this.inPart);
      const slice = chunk.subarray(off, off + n);
      this.part.update(slice);
      this.whole?.update(slice);
      this.inPart += n;
      off += n;
      if (this.inPart === PART_SIZE) {
        if (this.parts.length === 0 && this.wantWhole) this.whole = this.part.copy();
        this.parts.push(this.part.digest());
        this.part = createHash('md5');
        this.inPart = 0;
      }
    }
  }

  /** `etags`: the whole MD5 (when one part, or asked for), then the multipart ETag at PART_SIZE. */
  finish(): { sha256: string; size: number; etags: string[] } {
    if (this.inPart > 0 || this.parts.length === 0) this.parts.push(this.part.digest());
    const multi = `${createHash('md5').update(Buffer.concat(this.parts)).digest('hex')}-${this.parts.length}`;
    const whole = this.parts.length === 1 ? this.parts[0].toString('hex') : (this.whole?.digest('hex') ?? null);
    return { sha256: this.sha.digest('hex'), size: this.size, etags: whole === null ? [multi] : [whole, multi] };
  }
}

export async function digestFile(path: string): Promise<{ sha256: string; size: number; etags: string[] }> {
  const d = new Digest();
  for await (const chunk of createReadStream(path, { highWaterMark: 1024 * 1024 })) d.update(chunk as Buffer);
  return d.finish();
}

/** Thrown when a local file's bytes are not the ones its manifest names: no retry can fix that. */
export class LocalMismatch extends Error {
  override readonly name = 'LocalMismatch';
}

/** `o` with its ETags, read from its file; throws LocalMismatch when the file is not what `o` says. */
export async function withEtags(o: LocalObject): Promise<LocalObject> {
  if (o.etags || o.path === undefined) return o;
  const d = await digestFile(o.path).catch(() => null);
  if (!d || d.size !== o.size || d.sha256 !== o.sha256) throw mismatch(o.path, d ? 'checksum differs' : 'missing');
  return { ...o, etags: d.etags };
}

const mismatch = (path: string, why: string): LocalMismatch =>
  new LocalMismatch(
    `${path} does not match its manifest (${why}): run \`pmtape verify --repair\` and compact again; its day was not published`,
  );

export function digestBytes(b: Uint8Array): { sha256: string; size: number; etags: string[] } {
  const d = new Digest();
  d.update(b);
  return d.finish();
}

const notFound = (e: unknown): boolean => {
  const x = e as { name?: string; $metadata?: { httpStatusCode?: number } };
  return x.name === 'NotFound' || x.name === 'NoSuchKey' || x.$metadata?.httpStatusCode === 404;
};

/** A GET of the whole object, or null when it does not exist. */
async function getObjectOrNull(s3: S3Client, bucket: string, key: string): Promise<GetObjectCommandOutput | null> {
  try {
    return await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
  } catch (e) {
    if (notFound(e)) return null;
    throw e;
  }
}

/** The sha256 and length of an object's bytes as the store serves them (a full read). */
export async function remoteDigest(s3: S3Client, bucket: string, key: string): Promise<{ sha256: string; size: number } | null> {
  const r = await getObjectOrNull(s3, bucket, key);
  if (r === null) return null;
  const h = createHash('sha256');
  let n = 0;
  for await (const chunk of r.Body as Readable) {
    h.update(chunk as Buffer);
    n += (chunk as Buffer).length;
  }
  // A body cut short without a socket error would otherwise look like a mismatch of the object.
  if (r.ContentLength !== undefined && n !== r.ContentLength) throw new Error(`read of ${key} truncated: ${n} of ${r.ContentLength} bytes`);
  return { sha256: h.digest('hex'), size: n };
}

/** Reads a small object whole (manifests, day records), or null when absent. */
export async function getBytes(s3: S3Client, bucket: string, key: string): Promise<Buffer | null> {
  const r = await getObjectOrNull(s3, bucket, key);
  if (r === null) return null;
  const chunks: Buffer[] = [];
  for await (const chunk of r.Body as Readable) chunks.push(chunk as Buffer);
  const out = Buffer.concat(chunks);
  if (r.ContentLength !== undefined && out.length !== r.ContentLength)
    throw new Error(`read of ${key} truncated: ${out.length} of ${r.ContentLength} bytes`);
  return out;
}

/** 'same' when the stored object provably holds `o`'s bytes, 'absent', or 'different'. */
export async function compare(s3: S3Client, bucket: string, o: LocalObject): Promise<'same' | 'absent' | 'different'> {
  let head;
  try {
    head = await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: o.key }));
  } catch (e) {
    if (notFound(e)) return 'absent';
    throw e;
  }
  if (head.ContentLength !== o.size || head.Metadata?.sha256 !== o.sha256) return 'different';
  const etag = (head.ETag ?? '').replace(/"/g, '');
  if (o.etags?.includes(etag)) return 'same';
  // Metadata can be copied onto other bytes, and some stores' ETags are not MD5s: read it back.
  const r = await remoteDigest(s3, bucket, o.key);
  return r && r.size === o.size && r.sha256 === o.sha256 ? 'same' : 'different';
}

/**
 * Uploads `o`, then proves the stored copy; throws when it does not match. Up to PART_SIZE in one
 * PUT (putWhole), past it as a multipart upload (putParts). Either way the file is read once, and
 * a file whose bytes are not the ones `o` names (sha256) never stays in the bucket: LocalMismatch.
 * `payloadsChecked`: the store refuses a body unlike its signed sha256 (client.ts checksPayloads),
 * so a single PUT it accepts is the proof, with no MD5 computed.
 */
export async function upload(s3: S3Client, bucket: string, o: LocalObject, payloadsChecked = false): Promise<void> {
  const sent = o.size <= PART_SIZE ? await putWhole(s3, bucket, o, payloadsChecked) : await putParts(s3, bucket, o);
  if (sent.proven) return;
  // The ETag of the PUT (or of the completed multipart upload) is the server's MD5 of what it
  // stored: when it is the expected one, that is the proof, without another request.
  if (sent.etag !== undefined && sent.etags.includes(sent.etag.replace(/"/g, ''))) return;
  const state = await compare(s3, bucket, { ...o, etags: sent.etags });
  if (state !== 'same') throw new Error(`${o.key}: the stored copy does not match the local file after upload (${state})`);
}

interface Sent {
  readonly etag: string | undefined;
  /** The ETags the stored copy may have (Digest.finish). */
  readonly etags: readonly string[];
  /** The store accepted the bytes of `o`'s sha256 as the signed payload hash: nothing left to check. */
  readonly proven?: boolean;
}

/**
 * One PUT of an object that fits one part. Its bytes are read whole (as lib-storage buffers a part)
 * and checked against `o`'s sha256 before anything is sent: a damaged local file never reaches the
 * bucket. That sha256 is the request's signed payload hash (x-amz-content-sha256: the SDK does not
 * hash the body again). A store that checks it (`payloadsChecked`) refuses a body changed on the
 * way, so its 200 proves the copy; otherwise the MD5 goes too, as Content-MD5, and proves it by
 * the ETag (an MD5 pass costs twice a sha256 one, with SHA extensions).
 */
async function putWhole(s3: S3Client, bucket: string, o: LocalObject, payloadsChecked: boolean): Promise<Sent> {
  const body = o.body ?? (await readFile(o.path!).catch(() => null));
  if (body === null) throw mismatch(o.path!, 'missing');
  let sent: { sha256: string; size: number; etags: string[] };
  if (payloadsChecked) sent = { sha256: createHash('sha256').update(body).digest('hex'), size: body.length, etags: [] };
  else {
    const d = new Digest();
    d.update(body);
    sent = d.finish();
  }
  if (sent.size !== o.size || sent.sha256 !== o.sha256) throw mismatch(o.path ?? o.key, 'checksum differs');
  const put = new PutObjectCommand({
    Bucket: bucket,
    Key: o.key,
    Body: body,
    ContentType: o.contentType,
    ContentMD5: payloadsChecked ? undefined : Buffer.from(sent.etags[0], 'hex').toString('base64'),
    Metadata: { sha256: o.sha256 },
  });
  put.middlewareStack.add(
    (next) => async (args) => {
      (args.request as { headers: Record<string, string> }).headers['x-amz-content-sha256'] = sent.sha256;
      return next(args);
    },
    { step: 'build', name: 'pmtapePayloadSha256' },
  );
  return { etag: (await s3.send(put)).ETag, etags: sent.etags, proven: payloadsChecked };
}

/**
 * A multipart upload at PART_SIZE, the file hashed while it is sent (one read feeds the upload,
 * its sha256 and the parts' MD5s): when its bytes are not the ones `o` names, the object is
 * deleted again (no manifest names it yet) and LocalMismatch thrown.
 */
async function putParts(s3: S3Client, bucket: string, o: LocalObject): Promise<Sent> {
  const digest = new Digest(false); // a multipart upload's ETag is the parts' one: no whole MD5
  let body: Readable | Uint8Array;
  if (o.path !== undefined) {
    const file = createReadStream(o.path, { highWaterMark: 1024 * 1024 });
    const tee = new Transform({
      transform(chunk: Buffer, _enc, cb) {
        digest.update(chunk);
        cb(null, chunk);
      },
    });
    file.on('error', (e) => tee.destroy(e));
    body = file.pipe(tee);
  } else {
    body = o.body!;
    digest.update(body);
  }
  const up = new Upload({
    client: s3,
    params: { Bucket: bucket, Key: o.key, Body: body, ContentType: o.contentType, Metadata: { sha256: o.sha256 } },
    partSize: PART_SIZE,
    queueSize: 4,
    leavePartsOnError: false,
  });
  let etag: string | undefined;
  try {
    etag = (await up.done()).ETag;
  } finally {
    if (typeof (body as Readable).destroy === 'function') (body as Readable).destroy();
  }
  const sent = digest.finish();
  if (sent.size !== o.size || sent.sha256 !== o.sha256) {
    await s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: o.key })).catch(() => undefined);
    throw mismatch(o.path ?? o.key, 'checksum differs');
  }
  return { etag, etags: sent.etags };
}
