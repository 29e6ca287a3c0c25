// One registry of error codes. User-facing codes map to their HTTP status: the API's single error
// handler, the stream's error messages and the CLI speak them. Recorder codes never reach HTTP:
// recorders report them to a callback and count them in `pmtape_recorder_errors_total`.

export const ERROR_STATUS = {
  invalid_parameter: 400,
  invalid_cursor: 400,
  unauthorized: 401,
  plan_required: 403,
  not_found: 404,
  /** A dataset download's `Range` lies outside the file (the answer's `Content-Range` gives the size). */
  range_not_satisfiable: 416,
  /** The client sent no complete request in time (answered by the HTTP layer, before any route). */
  request_timeout: 408,
  /** The request line and headers together exceed the server's limit (before any route). */
  request_too_large: 431,
  rate_limited: 429,
  internal: 500,
  /** `serve --live-from`: the live server a request was forwarded to did not answer. */
  upstream_unavailable: 502,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

/** An error that is meant to reach a user: a code from the registry and a sentence for a human. */
export class PmtapeError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  constructor(code: ErrorCode, message: string) {
    super(message);
    this.name = 'PmtapeError';
    this.code = code;
    this.status = ERROR_STATUS[code];
  }
}

export const invalidParameter = (name: string, why: string): PmtapeError =>
  new PmtapeError('invalid_parameter', `Parameter '${name}' ${why}.`);
export const notFound = (what: string): PmtapeError => new PmtapeError('not_found', what);

/** Codes of recorder errors (labels of `pmtape_recorder_errors_total`). */
export type RecorderErrorCode =
  | 'connect'
  | 'disconnected'
  | 'stale'
  | 'http_429'
  | 'http_5xx'
  | 'http_4xx'
  | 'timeout'
  | 'malformed'
  | 'unknown_type'
  | 'sequence_gap'
  | 'write'
  | 'internal';

/** What a recorder reports to its error callback; the recorder keeps running. */
export class RecorderError extends Error {
  constructor(
    readonly code: RecorderErrorCode,
    message: string,
    readonly detail?: unknown,
  ) {
    super(message);
    this.name = 'RecorderError';
  }
}

/** Errors of the storage and recorder layers (not user-facing HTTP errors). */
export class StorageError extends Error {
  constructor(
    message: string,
    readonly file?: string,
    readonly offset?: number,
  ) {
    super(message);
    this.name = 'StorageError';
  }
}

/** errno codes that mean "the disk cannot take this write now", not "this log is broken". */
export const DISK_ERROR_CODES: ReadonlySet<string> = new Set(['ENOSPC', 'EDQUOT', 'EIO']);

/**
 * A write the disk refused (full filesystem, quota, I/O error). The writer rolled its files back
 * to the end of the last acknowledged frame and stays usable: the caller pauses and retries later.
 * `errno` is the system code (ENOSPC, EDQUOT, EIO).
 */
export class DiskError extends StorageError {
  /** `firstLostMs`: recv_ts of the first record that was not kept (null when none was refused). */
  constructor(
    message: string,
    readonly errno: string,
    readonly firstLostMs: number | null = null,
    file?: string,
  ) {
    super(message, file);
    this.name = 'DiskError';
  }
}

/** Raised when a second writer tries to open a log another live process holds. */
export class LockedError extends StorageError {
  constructor(
    file: string,
    readonly holderPid: number,
  ) {
    super(
      `${file} is locked by process ${holderPid}: another recorder is writing this market. ` +
        `Give each record process disjoint markets (config "shard") or stop the other one.`,
      file,
    );
    this.name = 'LockedError';
  }
}
