// One registry of error codes and their HTTP status. The API's single error handler, the stream's
// error messages and the CLI all speak these codes; recorders report them to a callback.

export const ERROR_STATUS = {
  invalid_parameter: 400,
  invalid_cursor: 400,
  unauthorized: 401,
  plan_required: 403,
  not_found: 404,
  rate_limited: 429,
  internal: 500,
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

/** Errors of the storage and recorder layers (not user-facing HTTP errors). */
export class StorageError extends Error {
  constructor(message: string, readonly file?: string, readonly offset?: number) {
    super(message);
    this.name = 'StorageError';
  }
}

/** Raised when a second writer tries to open a log another live process holds. */
export class LockedError extends StorageError {
  constructor(file: string, readonly holderPid: number) {
    super(
      `${file} is locked by process ${holderPid}: another recorder is writing this market. ` +
        `Give each record process disjoint markets (config "shard") or stop the other one.`,
      file,
    );
    this.name = 'LockedError';
  }
}
