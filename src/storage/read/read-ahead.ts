// One item of read-ahead for a pass that reads a file while its consumer computes: the next chunk's
// read is issued before the current chunk is handed out, so the disk (the thread pool) works while
// the consumer handles the chunk, instead of the process sitting idle on every read.

/**
 * The items of `source`, with the next one always requested before the current one is yielded
 * (at most one ahead). Stopping early (break, return()) waits for the request in flight, then
 * returns `source`, so a pass still releases its file handle. An error of the request in flight
 * is thrown when its item would have been taken, never left unhandled meanwhile.
 */
export async function* readAhead<T>(source: AsyncIterable<T>): AsyncGenerator<T> {
  const it = source[Symbol.asyncIterator]();
  let pending: Promise<IteratorResult<T>> | null = null;
  let done = false;
  try {
    pending = it.next();
    for (;;) {
      const p: Promise<IteratorResult<T>> = pending;
      pending = null;
      const r = await p;
      if (r.done) {
        done = true;
        return;
      }
      pending = it.next();
      pending.catch(() => undefined); // handled when awaited above; never an unhandled rejection meanwhile
      yield r.value;
    }
  } finally {
    if (!done) {
      if (pending) await pending.catch(() => undefined);
      await it.return?.();
    }
  }
}
