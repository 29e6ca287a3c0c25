// Serialized bodies of the latest-book routes, one per (route family, market, query options), so a
// hot market is shaped and serialized once per change instead of once per request. A body is reused
// only while it was built from the very same newest record, catalogue entry and `stale` flag; the
// newest record comes from LatestBooks, which learns of appends from file events (see latest.ts).
// Bodies are kept as UTF-8 bytes: a string body is measured (Buffer.byteLength) and encoded again
// on every send, an allocation per request that the bytes spare.

import { LRUCache } from 'lru-cache';

/** The content type Fastify gives JSON bodies; set explicitly when a pre-serialized body is sent. */
export const JSON_TYPE = 'application/json; charset=utf-8';

interface Body {
  /** The newest served record the body shows (identity: a rebuilt tracker makes a new object). */
  readonly rec: object;
  /** The catalogue entry the body was shaped from (null when the shape does not use one). */
  readonly source: object | null;
  readonly stale: boolean;
  readonly bytes: Buffer;
}

export class LatestBodies {
  private readonly cache: LRUCache<string, Body>;

  constructor(maxBytes = 16 * 1024 * 1024) {
    this.cache = new LRUCache<string, Body>({ maxSize: maxBytes, sizeCalculation: (b) => 256 + b.bytes.length });
  }

  /**
   * The body for `key` built from (`rec`, `source`, `stale`): the kept one when it was built from the
   * same state, else `build()` (called once per change), which is then kept.
   */
  body(key: string, rec: object, source: object | null, stale: boolean, build: () => string): Buffer {
    const hit = this.cache.get(key);
    if (hit !== undefined && hit.rec === rec && hit.source === source && hit.stale === stale) return hit.bytes;
    const bytes = Buffer.from(build());
    this.cache.set(key, { rec, source, stale, bytes });
    return bytes;
  }

  /** The kept body when it was built from this very state, else undefined (no build). */
  peek(key: string, rec: object, source: object | null, stale: boolean): Buffer | undefined {
    const hit = this.cache.get(key);
    return hit !== undefined && hit.rec === rec && hit.source === source && hit.stale === stale ? hit.bytes : undefined;
  }

  get size(): number {
    return this.cache.size;
  }
}
