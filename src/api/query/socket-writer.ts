// Writing a long answer straight to the response's socket, paced by the client: the replay's NDJSON
// lines and the dataset rows' Arrow IPC pieces both stream through it, never buffering ahead of a
// slow reader.

import type { FastifyReply } from 'fastify';

/** Writes to the raw response, waiting for `drain` when the socket is full; false once the client is gone. */
export function socketWriter(reply: FastifyReply): { write(chunk: Buffer): Promise<boolean>; gone(): boolean } {
  const raw = reply.raw;
  let closed = false;
  raw.on('close', () => (closed = true));
  return {
    gone: () => closed || raw.destroyed,
    write: (chunk) => {
      if (closed || raw.destroyed) return Promise.resolve(false);
      if (raw.write(chunk)) return Promise.resolve(true);
      return new Promise((resolve) => {
        const done = (): void => {
          raw.off('drain', done);
          raw.off('close', done);
          resolve(!closed && !raw.destroyed);
        };
        raw.on('drain', done);
        raw.on('close', done);
      });
    },
  };
}
