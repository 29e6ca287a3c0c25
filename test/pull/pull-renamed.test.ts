// A server rewrote a partition under the new part names (`<dataset>-<date>-0000.parquet` instead of
// `<dataset>-<date>.parquet`): a mirror pulled before keeps its old copy (pull never deletes), and a
// glob read its rows twice beside the new file. Now the next pull moves such a file aside to
// `_<name>.superseded` (no `*.parquet` glob matches it) once the new first part is in place, and
// only when pull itself had verified it: a file of the user's is left alone.

import t from 'tap';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runCliOnce, tempDir } from '../selfhost/helpers.js';
import { bytes, fakeServer, P, summaryOf, tree, type FakeFile } from './fake-server.js';

t.setTimeout(300_000);
const SLOW = { timeoutMs: 150_000 };

t.test('a first part the server renamed is moved aside by the next pull; nothing else is touched', async (t) => {
  const first = bytes(20_000, 1);
  const second = bytes(20_000, 2);
  const files: FakeFile[] = [
    { path: P('book_changes-2026-07-26'), body: first },
    { path: P('book_changes-2026-07-26-0001'), body: second },
  ];
  const { url } = await fakeServer(t, files);
  const out = join(tempDir(t, 'pmtape-pull-'), 'mirror');
  const a = await runCliOnce(['pull', url, '--key', 'k', '--out', out], SLOW);
  t.equal(a.code, 0, 'the first pull succeeds');
  // The user's own file with an old-style name in another partition folder pull never verified.
  writeFileSync(join(out, 'family=coin/dataset=books/date=2026-07-26', 'trades-2026-07-26.parquet'), 'mine');

  files.splice(
    0,
    files.length,
    { path: P('book_changes-2026-07-26-0000'), body: first },
    { path: P('book_changes-2026-07-26-0001'), body: second },
    { path: P('trades-2026-07-26-0000'), body: bytes(10, 3) },
  );
  const b = await runCliOnce(['pull', url, '--key', 'k', '--out', out], SLOW);
  t.equal(b.code, 0, 'the second pull succeeds');
  t.same(summaryOf(b.stdout), { files: 3, downloaded: 2, skipped: 1, bytes: 20_010, failed: 0 });
  t.match(b.stderr, /book_changes-2026-07-26\.parquet: renamed by the server/);
  t.same(
    tree(out),
    [
      '.pmtape-pull.json',
      P('_book_changes-2026-07-26').replace(/\.parquet$/, '.parquet.superseded'),
      P('book_changes-2026-07-26-0000'),
      P('book_changes-2026-07-26-0001'),
      P('trades-2026-07-26'),
      P('trades-2026-07-26-0000'),
    ].sort(),
    "the old first part moved aside; the user's file untouched",
  );
});
