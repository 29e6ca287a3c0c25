// Relative links of the project's markdown pages, checked the way GitHub renders them: a link must
// name an existing file, and a `#fragment` must be the slug of a heading of the page it points at
// (github-slugger: the same slugs, duplicates numbered `-1`, `-2`, …). Web links are not followed.

import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, relative, resolve } from 'node:path';
import GithubSlugger from 'github-slugger';

export interface BrokenLink {
  readonly file: string; // relative to the root given to brokenLinks
  readonly line: number;
  readonly target: string;
  readonly why: string;
}

/** The page with fenced code blocks blanked out (lines kept, so line numbers still match). */
function withoutFences(md: string): string[] {
  let fence: string | null = null;
  return md.split('\n').map((line) => {
    const open = /^\s{0,3}(`{3,}|~{3,})/.exec(line)?.[1];
    if (fence === null && open) {
      fence = open[0];
      return '';
    }
    if (fence !== null) {
      if (line.trim().startsWith(fence.repeat(3))) fence = null;
      return '';
    }
    return line;
  });
}

/** GitHub's anchor of every heading of a page, in order (`## A \`b\`` → `a-b`). */
export function headingSlugs(md: string): Set<string> {
  const slugger = new GithubSlugger();
  const slugs = new Set<string>();
  for (const line of withoutFences(md)) {
    const m = /^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!m) continue;
    // The rendered text: code spans keep their content, links keep their text.
    const text = m[1].replace(/\[([^\]]*)\]\([^)]*\)/g, '$1').replace(/`/g, '');
    slugs.add(slugger.slug(text));
  }
  return slugs;
}

/** Inline links `[text](target)` of a page, outside code blocks and code spans. */
export function linksOf(md: string): { line: number; target: string }[] {
  const out: { line: number; target: string }[] = [];
  withoutFences(md).forEach((line, i) => {
    for (const m of line.matchAll(/\[(?:[^\]`]|`[^`]*`)*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
      const before = line.slice(0, m.index);
      if ((before.match(/`/g)?.length ?? 0) % 2 === 1) continue; // inside a code span
      out.push({ line: i + 1, target: m[1] });
    }
  });
  return out;
}

/** Every relative link of `files` (paths under `root`) that names a missing file or anchor. */
export function brokenLinks(root: string, files: readonly string[]): BrokenLink[] {
  const broken: BrokenLink[] = [];
  const slugCache = new Map<string, Set<string>>();
  const slugsOf = (path: string): Set<string> => {
    let s = slugCache.get(path);
    if (!s) slugCache.set(path, (s = headingSlugs(readFileSync(path, 'utf8'))));
    return s;
  };
  for (const file of files) {
    const from = resolve(root, file);
    for (const { line, target } of linksOf(readFileSync(from, 'utf8'))) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // http:, https:, mailto:
      const hash = target.indexOf('#');
      const pathPart = decodeURIComponent(hash < 0 ? target : target.slice(0, hash));
      const anchor = hash < 0 ? null : decodeURIComponent(target.slice(hash + 1));
      const to = pathPart === '' ? from : resolve(dirname(from), pathPart);
      const report = (why: string): void => {
        broken.push({ file: relative(root, from), line, target, why });
      };
      if (!existsSync(to)) {
        report(`${relative(root, to)} does not exist`);
        continue;
      }
      if (anchor === null) continue;
      if (!statSync(to).isFile() || !to.endsWith('.md')) {
        report(`#${anchor} points into ${relative(root, to)}, which is not a markdown page`);
      } else if (!slugsOf(to).has(anchor)) {
        report(`${relative(root, to)} has no heading whose anchor is #${anchor}`);
      }
    }
  }
  return broken;
}
