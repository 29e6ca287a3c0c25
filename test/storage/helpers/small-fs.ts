// A small real filesystem for tests of a full disk: a tmpfs of a given size mounted at a new temp
// folder, unmounted at teardown. Only root may mount, so elsewhere it is null and the tests fall
// back to injected faults (src/storage/log/disk-faults.ts).

import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

interface TapLike {
  teardown(fn: () => unknown): void;
}

export function smallFs(t: TapLike, bytes: number): string | null {
  if (process.platform !== 'linux' || process.getuid?.() !== 0) return null;
  const dir = mkdtempSync(join(tmpdir(), 'pmtape-tmpfs-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${bytes}`, 'tmpfs', dir], { stdio: 'ignore' });
  } catch {
    rmSync(dir, { recursive: true, force: true });
    return null;
  }
  t.teardown(() => {
    try {
      execFileSync('umount', ['-l', dir], { stdio: 'ignore' });
    } catch {
      // already gone
    }
    rmSync(dir, { recursive: true, force: true });
  });
  return dir;
}
