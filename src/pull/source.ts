// Where `pmtape pull` mirrors from, behind one small interface: a pmtape server (`/v3/datasets`
// over HTTP) or a bucket holding the archive (s3.ts). Both list files with their size and sha256
// and serve one file whole or from an offset; staging, resuming, verification and the summary are
// the same for both (download.ts, mirror.ts).

import { get, listDatasets, type ClientOptions, type ListedFile, type ListFilters } from './client.js';
import { fileUrlPath } from './paths.js';

/** One file's bytes: the whole file (200), its tail (206), or a refused range (416). */
export interface Opened {
  readonly status: 200 | 206 | 416;
  readonly etag: string | null;
  readonly contentRange: string | null;
  readonly body: AsyncIterable<Uint8Array> | null;
  /** Drops an unread body (a refused range). */
  discard(): Promise<void>;
}

export interface PullSource {
  /** Named in messages: the server's URL or the bucket's s3:// URL. */
  readonly name: string;
  /** Every file under the filters; throws FatalError or TransientError (retried by the caller). */
  list(filters: ListFilters, onRetry: (why: string, waitMs: number) => void): Promise<ListedFile[]>;
  /**
   * The file at `path`, from byte `from` when `etag` still names the same bytes (else whole).
   * Throws TransientError (worth retrying) or FatalError; `signal` cuts the transfer.
   */
  open(path: string, from: number, etag: string | null, signal: AbortSignal): Promise<Opened>;
  close(): void;
}

/** A pmtape server: `/v3/datasets` and `/v3/datasets/files/<path>` with Range + If-Range. */
export function httpSource(client: ClientOptions): PullSource {
  const base = client.baseUrl.endsWith('/') ? client.baseUrl : `${client.baseUrl}/`;
  return {
    name: client.baseUrl,
    list: (filters, onRetry) => listDatasets(client, filters, onRetry),
    async open(path, from, etag, signal) {
      const url = new URL(`v3/datasets/files/${fileUrlPath(path)}`, base);
      const headers: Record<string, string> = from > 0 && etag ? { range: `bytes=${from}-`, 'if-range': etag } : {};
      const res = await get({ ...client, signal }, url.href, headers, [416]);
      return {
        status: res.status === 416 ? 416 : res.status === 206 ? 206 : 200,
        etag: res.headers.get('etag'),
        contentRange: res.headers.get('content-range'),
        body: res.body as AsyncIterable<Uint8Array> | null,
        discard: async () => void (await res.arrayBuffer().catch(() => undefined)),
      };
    },
    close: () => undefined,
  };
}
