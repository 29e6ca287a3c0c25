// The CLI, runnable by another user. The read-only replica check (scale-out.test.ts) runs `serve` as
// uid 65534, which cannot use this checkout: a clone lives wherever its owner put it, often under a
// folder only the owner can enter (/root, `mktemp -d`: mode 0700), and tap's NODE_OPTIONS makes every
// child load tap's loader from the checkout's node_modules. So the other user gets its own copy, in a
// folder it can enter: dist/cli.js, dist/src, public/, package.json and only the packages the CLI needs
// at run time (package.json "dependencies", followed through node_modules); runCli's `noLoader` keeps
// tap's loader out of it. Files are hard-linked where they are world-readable, else copied readable.

import {
  copyFileSync,
  chmodSync,
  existsSync,
  linkSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  statSync,
  symlinkSync,
} from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { REPO } from './helpers.js';

/** Makes `dir` and its missing parents, each 0755 whatever the umask. */
function mkdirOpen(dir: string): void {
  if (existsSync(dir)) return;
  mkdirOpen(dirname(dir));
  mkdirSync(dir);
  chmodSync(dir, 0o755);
}

/** Copies a tree readable by everyone; `skipTop` names entries of `src` itself to leave out. */
export function copyTree(src: string, dst: string, skipTop: string[] = []): void {
  mkdirOpen(dst);
  for (const name of readdirSync(src)) {
    if (skipTop.includes(name)) continue;
    const from = join(src, name);
    const to = join(dst, name);
    const st = lstatSync(from);
    if (st.isSymbolicLink()) {
      const target = readlinkSync(from);
      // A relative link stays inside the copied tree; an absolute one is copied as what it points at.
      if (!target.startsWith(sep)) symlinkSync(target, to);
      else if (statSync(from).isDirectory()) copyTree(from, to);
      else copyFile(from, to, statSync(from).mode);
    } else if (st.isDirectory()) copyTree(from, to);
    else if (st.isFile()) copyFile(from, to, st.mode);
  }
}

function copyFile(from: string, to: string, mode: number): void {
  if (mode & 0o004) {
    try {
      linkSync(from, to);
      return;
    } catch {
      // another filesystem, or links refused: copy below
    }
  }
  copyFileSync(from, to);
  chmodSync(to, mode & 0o111 ? 0o755 : 0o644);
}

/** The folder of package `name` as Node would resolve it from `from`, looking no higher than `repo`. */
function resolvePackage(repo: string, from: string, name: string): string | null {
  for (let dir = from; ; dir = dirname(dir)) {
    const candidate = join(dir, 'node_modules', name);
    if (existsSync(join(candidate, 'package.json'))) return candidate;
    if (dir === repo || dirname(dir) === dir) return null;
  }
}

/** The package folders (under `repo`) the CLI needs at run time: "dependencies", transitively. */
export function runtimePackages(repo: string): string[] {
  const deps = (dir: string): Array<[string, boolean]> => {
    const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as Record<string, Record<string, string> | undefined>;
    return [
      ...Object.keys(pkg.dependencies ?? {}).map((n): [string, boolean] => [n, false]),
      // Optional and peer dependencies are taken when installed (e.g. this platform's native binary).
      ...Object.keys({ ...pkg.optionalDependencies, ...pkg.peerDependencies }).map((n): [string, boolean] => [n, true]),
    ];
  };
  const found = new Set<string>();
  const queue: Array<[string, string, boolean]> = deps(repo).map(([n, optional]) => [repo, n, optional]);
  while (queue.length) {
    const [from, name, optional] = queue.shift()!;
    const dir = resolvePackage(repo, from, name);
    if (dir === null) {
      if (optional) continue;
      throw new Error(`runtime package ${name} (needed from ${from}) not found under ${repo}/node_modules: run npm ci`);
    }
    if (found.has(dir)) continue;
    found.add(dir);
    for (const [n, opt] of deps(dir)) queue.push([dir, n, opt]);
  }
  return [...found];
}

/** Folders on the way to `path` that other users cannot enter (no o+x), outermost first. */
export function closedAncestors(path: string): string[] {
  const out: string[] = [];
  for (let dir = dirname(resolve(path)); ; dir = dirname(dir)) {
    if ((statSync(dir).mode & 0o001) === 0) out.unshift(dir);
    if (dirname(dir) === dir) return out;
  }
}

/**
 * Lays the CLI of `repo` (REPO by default) under `dest` for another user and returns its cli.js.
 * Throws, naming the folder, when that user could not reach `dest` or the node binary anyway.
 */
export function cliForOtherUser(dest: string, repo: string = REPO): string {
  for (const path of [dest, process.execPath]) {
    const closed = closedAncestors(path);
    if (closed.length)
      throw new Error(
        `other users cannot enter ${closed.join(', ')} on the way to ${path}: run the tests with TMPDIR (and node) in folders they can enter, e.g. /tmp`,
      );
  }
  mkdirOpen(join(dest, 'dist'));
  copyFile(join(repo, 'package.json'), join(dest, 'package.json'), 0o644);
  copyFile(join(repo, 'dist', 'cli.js'), join(dest, 'dist', 'cli.js'), 0o755);
  copyTree(join(repo, 'dist', 'src'), join(dest, 'dist', 'src'));
  if (existsSync(join(repo, 'public'))) copyTree(join(repo, 'public'), join(dest, 'public'));
  for (const dir of runtimePackages(repo)) copyTree(dir, join(dest, relative(repo, dir)), ['node_modules']);
  return join(dest, 'dist', 'cli.js');
}
