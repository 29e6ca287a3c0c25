// A process that rewrites one file durably in a loop until it is killed. Usage:
//   node durable-child.js <path> <async|sync|prepared|replace>
// Version n holds `{"n":n,"sha":<sha256 of body>,"body":"..."}` with a body of varying size (up to
// ~100 KB, so a kill often lands inside a write); prints `wrote <n>` once writeFileDurable returned.

import { createHash } from 'node:crypto';
import { prepareDurable, replaceFile, writeFileDurable, writeFileDurableSync } from '../../../src/storage/durable.js';

const [path, mode] = process.argv.slice(2);
for (let n = 1; ; n++) {
  const body = String(n % 10).repeat(1 + ((n * 7919) % 100_000));
  const text = JSON.stringify({ n, sha: createHash('sha256').update(body).digest('hex'), body });
  if (mode === 'sync') writeFileDurableSync(path, text);
  else if (mode === 'prepared') await (await prepareDurable(path, text)).commit();
  else if (mode === 'replace') await replaceFile(path, text);
  else await writeFileDurable(path, text);
  process.stdout.write(`wrote ${n}\n`);
}
