// Part files that are not on this machine: a stateless reader (`serve` over an archive) keeps the
// partitions' manifests in its data dir but not their data, which stays in the bucket. A mounted
// source answers for those paths with an object that reads byte ranges (the archive's ranged GETs
// and disk cache); the Parquet reader asks it only for the footer and the column chunks it decodes.
// The parquet layer knows nothing of S3: the archive side registers a resolver here.

/** A file read by ranges from elsewhere. `id` changes whenever its bytes could (its sha256). */
export interface RemoteFile {
  readonly size: number;
  readonly id: string;
  /** Bytes [start, end) of the file (end ≤ size). */
  read(start: number, end: number): Promise<Uint8Array>;
}

export type RemoteResolver = (path: string) => RemoteFile | null;

let resolvers: RemoteResolver[] = [];

/** Adds a resolver (a mounted archive); returns its removal. */
export function addRemoteResolver(r: RemoteResolver): () => void {
  resolvers.push(r);
  return () => void (resolvers = resolvers.filter((x) => x !== r));
}

/** The remote file behind a local path, or null (the path is read from the file system). */
export function remoteFile(path: string): RemoteFile | null {
  for (const r of resolvers) {
    const f = r(path);
    if (f) return f;
  }
  return null;
}

/** A remote file, or a range of it, in the `Blob` shape parquet-wasm reads (as FileRanges). */
export class RemoteRanges {
  constructor(
    private readonly file: RemoteFile,
    private readonly start = 0,
    private readonly end = file.size,
  ) {}

  get size(): number {
    return this.end - this.start;
  }

  slice(a = 0, b = this.size): RemoteRanges {
    const start = Math.min(this.end, this.start + Math.max(0, a));
    const end = Math.max(start, Math.min(this.end, this.start + Math.max(0, b)));
    return new RemoteRanges(this.file, start, end);
  }

  async arrayBuffer(): Promise<ArrayBuffer> {
    if (this.end <= this.start) return new ArrayBuffer(0);
    const b = await this.file.read(this.start, this.end);
    // A fresh buffer of exactly this length (the source may hand out a view on a larger block).
    return b.byteOffset === 0 && b.byteLength === b.buffer.byteLength ? (b.buffer as ArrayBuffer) : b.slice().buffer;
  }

  async close(): Promise<void> {
    // Nothing held: the blocks belong to the source's cache.
  }
}
