// Byte ranges of archived objects, fetched with ranged GETs and kept on local disk under a byte
// bound (least recently used first out). Objects are cut into aligned blocks: a read fetches its
// missing blocks (one GET per run of adjacent missing blocks), so a footer or a row group's column
// chunks cost a request or two and a whole file is never downloaded to read part of it. Blocks are
// named by the object's sha256, so a replaced object never serves old bytes. The folder is its own
// index: a block is written under a temporary name and renamed, so a file under a block's name is
// always whole, and a restarted reader takes the blocks it finds back (oldest first out).

import { GetObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { mkdir, readdir, readFile, rename, stat, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { LRUCache } from 'lru-cache';
import { withRetries } from './client.js';

/** Block size: small enough that a market's row group in a large file is not a large fetch. */
export const RANGE_BLOCK = 64 * 1024;

/** What went over the network (tests check that reads stay narrow). */
export interface RangeStats {
  requests: number;
  bytes: number;
  /** Blocks served from the disk cache. */
  hits: number;
  /** Blocks dropped from the disk cache to keep it under its bound. */
  evicted: number;
}

/** A whole block's file name: the object's sha256 and the block's index. */
const BLOCK_NAME = /^[0-9a-f]{64}-\d+$/;

export class RangeCache {
  readonly stats: RangeStats = { requests: 0, bytes: 0, hits: 0, evicted: 0 };
  /** Block name → its size on disk; eviction unlinks the file. */
  private readonly disk: LRUCache<string, number>;
  /** Fetches in flight, so concurrent readers of one block make one request. */
  private readonly pending = new Map<string, Promise<Uint8Array>>();

  private constructor(
    private readonly s3: S3Client,
    private readonly bucket: string,
    private readonly dir: string,
    maxBytes: number,
  ) {
    this.disk = new LRUCache<string, number>({
      maxSize: Math.max(1, maxBytes),
      sizeCalculation: (n) => Math.max(1, n),
      dispose: (_n, name, reason) => {
        if (reason === 'set') return; // the same block written again: same file
        this.stats.evicted++;
        void unlink(join(this.dir, name)).catch(() => undefined);
      },
    });
  }

  /**
   * A cache in `dir`, with the blocks an earlier run left there: a name that is not a whole block's
   * (a temporary file of a write cut short) is deleted, the rest are indexed oldest first, and what
   * exceeds `maxBytes` is dropped at once.
   */
  static async open(s3: S3Client, bucket: string, dir: string, maxBytes: number): Promise<RangeCache> {
    await mkdir(dir, { recursive: true });
    const cache = new RangeCache(s3, bucket, dir, maxBytes);
    const found: { name: string; size: number; at: number }[] = [];
    for (const name of await readdir(dir)) {
      const path = join(dir, name);
      if (!BLOCK_NAME.test(name)) {
        await unlink(path).catch(() => undefined);
        continue;
      }
      const st = await stat(path).catch(() => null);
      if (st?.isFile()) found.push({ name, size: st.size, at: st.mtimeMs });
    }
    // Newest kept while they fit, the rest deleted before the first read; then indexed oldest first.
    found.sort((x, y) => y.at - x.at);
    let kept = 0;
    const keep: typeof found = [];
    for (const b of found) {
      if (kept + Math.max(1, b.size) <= maxBytes) {
        kept += Math.max(1, b.size);
        keep.push(b);
      } else await unlink(join(dir, b.name)).catch(() => undefined);
    }
    for (const b of keep.reverse()) cache.disk.set(b.name, b.size);
    return cache;
  }

  /** Bytes held on disk now. */
  get cachedBytes(): number {
    return this.disk.calculatedSize ?? 0;
  }

  /** Bytes [start, end) of the object `key` of `size` bytes whose content is named by `sha256`. */
  async read(key: string, sha256: string, size: number, start: number, end: number): Promise<Uint8Array> {
    const first = Math.floor(start / RANGE_BLOCK);
    const last = Math.floor((end - 1) / RANGE_BLOCK);
    const blocks = new Array<Promise<Uint8Array>>(last - first + 1);
    // Runs of blocks neither on disk nor being fetched go out as one GET each.
    let run: number[] = [];
    const flush = (): void => {
      if (run.length === 0) return;
      const ks = run;
      run = [];
      const fetched = this.fetch(key, ks[0] * RANGE_BLOCK, Math.min(size, (ks[ks.length - 1] + 1) * RANGE_BLOCK));
      ks.forEach((k, i) => {
        const name = `${sha256}-${k}`;
        const p = fetched.then(async (buf) => {
          const b = buf.subarray(i * RANGE_BLOCK, Math.min(buf.length, (i + 1) * RANGE_BLOCK));
          await this.store(name, b);
          return b;
        });
        this.pending.set(name, p);
        void p.finally(() => this.pending.delete(name)).catch(() => undefined);
        blocks[k - first] = p;
      });
    };
    for (let k = first; k <= last; k++) {
      const name = `${sha256}-${k}`;
      const inflight = this.pending.get(name);
      if (inflight) {
        flush();
        blocks[k - first] = inflight;
      } else if (this.disk.get(name) !== undefined) {
        flush();
        this.stats.hits++;
        blocks[k - first] = readFile(join(this.dir, name)).then(
          (b) => new Uint8Array(b.buffer, b.byteOffset, b.byteLength),
          () => this.refetch(key, size, k, name),
        );
      } else {
        run.push(k);
      }
    }
    flush();
    const got = await Promise.all(blocks);
    const out = new Uint8Array(end - start);
    got.forEach((b, i) => {
      const k = first + i;
      const from = Math.max(start, k * RANGE_BLOCK) - k * RANGE_BLOCK;
      const to = Math.min(end, (k + 1) * RANGE_BLOCK) - k * RANGE_BLOCK;
      out.set(b.subarray(from, to), k * RANGE_BLOCK + from - start);
    });
    return out;
  }

  /** A block whose file vanished (evicted between the lookup and the read): fetched again. */
  private async refetch(key: string, size: number, k: number, name: string): Promise<Uint8Array> {
    this.disk.delete(name);
    const b = await this.fetch(key, k * RANGE_BLOCK, Math.min(size, (k + 1) * RANGE_BLOCK));
    await this.store(name, b);
    return b;
  }

  private async store(name: string, b: Uint8Array): Promise<void> {
    if (b.length > (this.disk.maxSize ?? Infinity)) return; // larger than the whole bound: not kept
    // Written aside and renamed: a kill mid-write leaves a temporary file, never a short block.
    const tmp = join(this.dir, `${name}.${process.pid}.tmp`);
    await writeFile(tmp, b);
    await rename(tmp, join(this.dir, name));
    this.disk.set(name, b.length);
  }

  /** One ranged GET (retried as a whole: a cut body is fetched again). */
  private fetch(key: string, start: number, end: number): Promise<Uint8Array> {
    return withRetries(`GET ${key} bytes=${start}-${end - 1}`, async () => {
      this.stats.requests++;
      const r = await this.s3.send(new GetObjectCommand({ Bucket: this.bucket, Key: key, Range: `bytes=${start}-${end - 1}` }));
      const b = await r.Body!.transformToByteArray();
      if (b.length !== end - start)
        throw new Error(`archive: ${key} bytes=${start}-${end - 1} gave ${b.length} bytes (the object changed or the reply was cut)`);
      this.stats.bytes += b.length;
      return b;
    });
  }
}
