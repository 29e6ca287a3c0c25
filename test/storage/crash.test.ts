// Durability under kill -9: a child process appends in a loop and reports every acknowledged seq;
// the parent SIGKILLs it at random moments (more than 20 times, across a UTC midnight) and checks
// after each that reopening recovers every acknowledged record exactly once and nothing else.

import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { openReader, openWriter, verifyDataDir } from '../../src/storage/index.js';
import { mixed } from './helpers/records.js';
import { crashRounds, helperPath, kill9, startNode } from './helpers/proc.js';

const KILLS = Math.max(22, crashRounds(22));

t.test('every acknowledged record survives repeated kill -9 exactly once, across day files', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'pmtape-crash-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const market = 'crash/market:1';
  const key = { family: 'coin' as const, stream: 'books' as const, market };
  // 1 ms per record starting 3 s before midnight: the kills land before, on and after the rollover.
  const start = Date.UTC(2026, 2, 14) - 3000;
  const acked = new Set<number>();
  let lastSeq = 0;
  for (let round = 0; round < KILLS; round++) {
    const child = startNode(helperPath('writer-child.js'), [dir, market, String(start), '-1', '1', '3']);
    t.teardown(() => kill9(child));
    const ready = await child.waitFor(/^ready \d+$/);
    const seqAtOpen = Number(ready.split(' ')[1]);
    t.ok(seqAtOpen >= lastSeq, `round ${round}: reopened at seq ${seqAtOpen}, not before the last acknowledged ${lastSeq}`);
    // Kill at a random moment: after a random number of acks plus a random sub-millisecond delay.
    const target = 1 + Math.floor(Math.random() * 400);
    await child.waitFor(new RegExp(`^ack ${seqAtOpen + target}$`)).catch(() => undefined);
    await new Promise((r) => setTimeout(r, Math.random() * 5));
    await kill9(child);
    for (const l of child.lines) if (l.startsWith('ack ')) acked.add(Number(l.slice(4)));
    lastSeq = Math.max(lastSeq, ...acked);
  }
  t.ok(acked.size > KILLS * 10, `many records were acknowledged (${acked.size})`);

  // Recovery on open (the writer's job), then a full check: no damage, nothing unreadable.
  const w = await openWriter(dir, key);
  await w.close();
  const checks = await verifyDataDir(dir, { repair: false });
  t.same(
    checks.filter((c) => !c.ok),
    [],
    'verify finds no damage after recovery',
  );
  t.ok(checks.length >= 4, 'the log spans at least two day files');

  const reader = openReader(dir, key);
  const seen: number[] = [];
  let contentOk = true;
  for await (const { rec } of reader.read('start')) {
    const { seq, ...obs } = rec;
    if (!isDeepStrictEqual(obs, mixed(rec.recv_ts, seq))) contentOk = false;
    seen.push(seq);
  }
  t.ok(contentOk, 'every record reads back exactly as written');
  let increasing = true;
  for (let i = 1; i < seen.length; i++) if (seen[i] <= seen[i - 1]) increasing = false;
  t.ok(increasing, 'seqs are strictly increasing (no duplicate, no reuse)');
  const present = new Set(seen);
  const missing = [...acked].filter((s) => !present.has(s));
  t.same(missing, [], 'every acknowledged seq is present');
  t.equal(seen[0], 1, 'the log starts at seq 1');
  t.equal((await reader.days()).length >= 2, true, 'records crossed UTC midnight into a second day file');
});
