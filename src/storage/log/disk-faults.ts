// Injected disk failures, for tests on machines where the suite cannot mount a small filesystem
// (not root). While a fault is set, a log write first lands part of its bytes (a torn frame, as a
// real full disk leaves) and then throws the errno, and a log fsync throws it. Nothing in the
// product sets a fault: without one each check is a single null test per batch.

export type DiskOp = 'write' | 'sync';

/** Given the operation and the log file's path, the errno to fail with, or null to let it pass. */
export type DiskFault = (op: DiskOp, path: string) => string | null;

let fault: DiskFault | null = null;

/** Sets (or with null clears) the fault every log writer of this process consults. */
export function injectDiskFault(f: DiskFault | null): void {
  fault = f;
}

/** The errno the injected fault asks for on this operation, or null. */
export function diskFault(op: DiskOp, path: string): string | null {
  return fault === null ? null : fault(op, path);
}

export function errnoError(code: string, op: string, path: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`${code}: ${op} ${path} (injected)`), { code, path });
}
