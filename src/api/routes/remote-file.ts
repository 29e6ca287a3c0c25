// A dataset file of a mounted archive (a stateless reader holds its manifest, not its bytes):
// streamed through the server from ranged reads of the bucket, with the same headers as a local
// file (ETag set by the caller, one Range, If-Range judged by the caller). Bytes pass through the
// reader's disk cache in pieces; the whole file is never held in memory.

import { Readable } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { PmtapeError } from '../../errors.js';
import type { RemoteFile } from '../../storage/index.js';

/** Bytes per ranged read while streaming. */
const PIECE = 1024 * 1024;

/** [start, end) of a single `bytes=` range, null for none or several (the whole file), 'bad' when outside. */
function rangeOf(header: string | undefined, size: number): [number, number] | null | 'bad' {
  if (!header) return null;
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!m || (m[1] === '' && m[2] === '')) return null;
  if (m[1] === '') {
    const n = Number(m[2]);
    return n === 0 ? 'bad' : [Math.max(0, size - n), size];
  }
  const a = Number(m[1]);
  const b = m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1);
  return a >= size || b < a ? 'bad' : [a, b + 1];
}

export function sendRemoteFile(req: FastifyRequest, reply: FastifyReply, file: RemoteFile, rangesAllowed: boolean): FastifyReply {
  const r = rangesAllowed ? rangeOf(req.headers.range, file.size) : null;
  if (r === 'bad') {
    void reply.header('Content-Range', `bytes */${file.size}`);
    throw new PmtapeError('range_not_satisfiable', `Header 'Range' asks for bytes outside the file (${file.size} bytes).`);
  }
  const [start, end] = r ?? [0, file.size];
  if (r) void reply.code(206).header('Content-Range', `bytes ${start}-${end - 1}/${file.size}`);
  void reply.header('Content-Length', String(end - start));
  if (req.method === 'HEAD') return reply.send();
  async function* pieces(): AsyncGenerator<Buffer> {
    for (let a = start; a < end; a += PIECE) {
      const b = await file.read(a, Math.min(end, a + PIECE));
      yield Buffer.from(b.buffer, b.byteOffset, b.byteLength);
    }
  }
  return reply.send(Readable.from(pieces()));
}
