// API keys: created, listed and revoked by the `keys` command, checked by the server. Only a SHA-256
// of each key is stored (in `<dataDir>/keys/keys.json`, written atomically); the secret is shown once.
// A key reads `pmt_<id>_<secret>`: the id finds the record, the hash is compared in constant time.

import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { mkdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { acquireLock, writeFileDurable } from '../../storage/index.js';
import { LockedError } from '../../errors.js';

export type Plan = 'free' | 'paid';
export const PLANS: readonly Plan[] = ['free', 'paid'];

export interface KeyRecord {
  readonly id: string;
  readonly name: string;
  readonly plan: Plan;
  /** sha256 of the whole key text, hex. */
  readonly hash: string;
  readonly created_ts: number;
  readonly revoked_ts: number | null;
}

interface KeyFile {
  readonly version: 1;
  readonly keys: KeyRecord[];
}

/** Compared against when the presented id is unknown (no sha256 is all zeros in practice). */
const NO_HASH = Buffer.alloc(32);

const KEY_RE = /^pmt_([0-9a-f]{12})_([A-Za-z0-9_-]{43})$/;

export function keysPath(dataDir: string): string {
  return join(dataDir, 'keys', 'keys.json');
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

async function readKeyFile(dataDir: string): Promise<KeyFile> {
  try {
    const parsed = JSON.parse(await readFile(keysPath(dataDir), 'utf8')) as KeyFile;
    if (!parsed || !Array.isArray(parsed.keys)) throw new Error('no "keys" array');
    return parsed;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return { version: 1, keys: [] };
    throw new Error(`${keysPath(dataDir)} is damaged (${(e as Error).message}); fix or remove it`);
  }
}

/**
 * Serializes read-modify-write of the key file between CLI processes: storage's pid lock, so a
 * holder killed with kill -9 is recognised as dead at once and its lock taken over (no wait).
 */
async function withLock<T>(dataDir: string, fn: () => Promise<T>): Promise<T> {
  const dir = join(dataDir, 'keys');
  const lock = join(dir, 'keys.lock');
  // Callers in this process queue here first: the file lock tells processes apart, not callers.
  const before = queued.get(lock) ?? Promise.resolve();
  let done!: () => void;
  const mine = new Promise<void>((r) => (done = r));
  const tail = before.then(() => mine);
  queued.set(lock, tail);
  await before;
  try {
    return await withFileLock(dir, lock, fn);
  } finally {
    done();
    if (queued.get(lock) === tail) queued.delete(lock);
  }
}

/** The last queued holder per lock path in this process. */
const queued = new Map<string, Promise<void>>();

async function withFileLock<T>(dir: string, lock: string, fn: () => Promise<T>): Promise<T> {
  await mkdir(dir, { recursive: true });
  let release: () => Promise<void>;
  for (let i = 0; ; i++) {
    try {
      release = await acquireLock(lock);
      break;
    } catch (e) {
      if (!(e instanceof LockedError) || i > 500) throw e;
      await new Promise((r) => setTimeout(r, 20)); // another live `keys` command: our turn is next
    }
  }
  try {
    return await fn();
  } finally {
    await release();
  }
}

async function writeKeyFile(dataDir: string, file: KeyFile): Promise<void> {
  await writeFileDurable(keysPath(dataDir), JSON.stringify(file, null, 2) + '\n', { mode: 0o600 });
}

/** C0 and C1 controls, DEL, and the bidirectional overrides that reorder what a terminal shows. */
const CONTROL = /[\p{Cc}\u202a-\u202e\u2066-\u2069]/u;

/** A stored name as one safe line: controls shown as JSON-style escapes (names stored before they were refused). */
export function printableName(name: string): string {
  return name.replace(new RegExp(CONTROL.source, 'gu'), (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** Creates a key; returns the record and the key text (the only time the secret exists). */
export async function createKey(dataDir: string, plan: Plan, name: string): Promise<{ record: KeyRecord; key: string }> {
  if (!PLANS.includes(plan)) throw new Error(`plan must be free or paid, got "${plan}"`);
  if (!name || name.length > 200) throw new Error('name must be 1..200 characters');
  // A newline or an escape sequence in a name would forge lines or repaint the terminal in `keys list`.
  if (CONTROL.test(name))
    throw new Error(
      `--name must not hold control characters (newlines, tabs, escape sequences), got ${JSON.stringify(name).slice(0, 80)}; use plain text`,
    );
  return withLock(dataDir, async () => {
    const file = await readKeyFile(dataDir);
    const id = randomBytes(6).toString('hex');
    const key = `pmt_${id}_${randomBytes(32).toString('base64url')}`;
    const record: KeyRecord = { id, name, plan, hash: sha256(key), created_ts: Date.now(), revoked_ts: null };
    await writeKeyFile(dataDir, { version: 1, keys: [...file.keys, record] });
    return { record, key };
  });
}

export async function listKeys(dataDir: string): Promise<KeyRecord[]> {
  return (await readKeyFile(dataDir)).keys;
}

/** Revokes a key by id; false when there is no such key. Revoked keys stay listed. */
export async function revokeKey(dataDir: string, id: string): Promise<boolean> {
  return withLock(dataDir, async () => {
    const file = await readKeyFile(dataDir);
    const rec = file.keys.find((k) => k.id === id);
    if (!rec) return false;
    if (rec.revoked_ts === null) {
      const keys = file.keys.map((k) => (k.id === id ? { ...k, revoked_ts: Date.now() } : k));
      await writeKeyFile(dataDir, { version: 1, keys });
    }
    return true;
  });
}

/**
 * Merges another copy of the key file (the archive's, as text; null: none) into this data dir's and
 * returns the merged text, which is also written here: every key of either, a key revoked in either
 * stays revoked (at its earliest revocation). Hosts sharing keys through the archive converge.
 */
export async function mergeKeyFile(dataDir: string, other: string | null): Promise<string> {
  return withLock(dataDir, async () => {
    const mine = await readKeyFile(dataDir);
    const byId = new Map(mine.keys.map((k) => [k.id, k]));
    if (other !== null) {
      let theirs: KeyFile;
      try {
        theirs = JSON.parse(other) as KeyFile;
        if (!theirs || !Array.isArray(theirs.keys)) throw new Error('no "keys" array');
      } catch (e) {
        throw new Error(
          `the archive's keys file is damaged (${(e as Error).message}); run \`pmtape keys\` on a host with a good copy after removing it`,
        );
      }
      for (const k of theirs.keys) {
        const have = byId.get(k.id);
        if (!have) byId.set(k.id, k);
        else if (k.revoked_ts !== null && (have.revoked_ts === null || k.revoked_ts < have.revoked_ts))
          byId.set(k.id, { ...have, revoked_ts: k.revoked_ts });
      }
    }
    const keys = [...byId.values()].sort((a, b) => a.created_ts - b.created_ts || (a.id < b.id ? -1 : 1));
    const file: KeyFile = { version: 1, keys };
    await writeKeyFile(dataDir, file);
    return JSON.stringify(file, null, 2) + '\n';
  });
}

/** Presented keys remembered as verified, at most (then the memory starts over). */
const MAX_VERIFIED = 10_000;

/**
 * The server's view of the key file: checked on every request from memory, reloaded when the file
 * changes (a stat every `pollMs`), so keys created or revoked by the CLI apply within a moment.
 */
export class KeyStore {
  private byId = new Map<string, { readonly rec: KeyRecord; readonly hash: Buffer }>();
  private stamp = '';
  /** Presented key → its record, for keys verified since the last reload. */
  private verified = new Map<string, KeyRecord>();
  /**
   * Whole `Authorization` header → its record, for headers verified since the last reload. Apart
   * from `verified`: a header that is a bare key (no `Bearer`) must not pass as a known header.
   */
  private verifiedHeaders = new Map<string, KeyRecord>();
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly dataDir: string,
    private readonly pollMs = 250,
  ) {}

  async start(): Promise<void> {
    await this.reload();
    this.timer = setInterval(() => void this.reload().catch(() => undefined), this.pollMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /** Re-reads the file when its identity (inode, size, mtime) changed; keeps the old view on error. */
  async reload(): Promise<void> {
    const st = await stat(keysPath(this.dataDir)).catch(() => null);
    const stamp = st ? `${st.ino}:${st.size}:${st.mtimeMs}` : 'none';
    if (stamp === this.stamp) return;
    const file = await readKeyFile(this.dataDir);
    // Stored hashes are decoded once per reload, not once per request.
    this.byId = new Map(file.keys.map((k) => [k.id, { rec: k, hash: Buffer.from(k.hash, 'hex') }]));
    this.verified = new Map();
    this.verifiedHeaders = new Map();
    this.stamp = stamp;
  }

  /** The live (not revoked) record for a presented key, or null. */
  verify(key: string): KeyRecord | null {
    // Keys verified since the last reload skip the hash (a client sends the same key on every
    // request). Only successes are kept, and the whole map goes on reload, so a revocation applies
    // as soon as the file is re-read; it is bounded, so clients cannot grow it.
    const known = this.verified.get(key);
    if (known !== undefined) return known;
    const rec = this.check(key);
    if (rec) {
      if (this.verified.size >= MAX_VERIFIED) this.verified.clear();
      this.verified.set(key, rec);
    }
    return rec;
  }

  /**
   * The record of an `Authorization` header that verified since the last reload, else undefined.
   * A client sends the same header on every request: one map lookup instead of parsing it.
   */
  knownHeader(header: string): KeyRecord | undefined {
    return this.verifiedHeaders.get(header);
  }

  /** Keeps a header whose bearer token `verify` accepted as `rec` (until the next reload). */
  rememberHeader(header: string, rec: KeyRecord): void {
    if (this.verifiedHeaders.size >= MAX_VERIFIED) this.verifiedHeaders.clear();
    this.verifiedHeaders.set(header, rec);
  }

  private check(key: string): KeyRecord | null {
    const m = KEY_RE.exec(key);
    const hit = m ? this.byId.get(m[1]) : undefined;
    // Hash even when the id is unknown so timing does not reveal which ids exist.
    const presented = createHash('sha256').update(key).digest();
    const stored = hit ? hit.hash : NO_HASH;
    const same = stored.length === presented.length && timingSafeEqual(stored, presented);
    return hit && same && hit.rec.revoked_ts === null ? hit.rec : null;
  }
}
