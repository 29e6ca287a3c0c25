// The README and every page under docs/ link each other by relative paths and #anchors; a moved
// section or a renamed heading must not leave a dead link. The checker is first shown to catch
// broken files and anchors on a page written here, then run on the real pages. The README stays a
// guide (at most 15,000 bytes): detail goes to a page under docs/ and the README links it.

import t from 'tap';
import { mkdirSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO, tempDir } from './helpers.js';
import { brokenLinks, headingSlugs, linksOf } from './markdown-links.js';

const pages = [
  'README.md',
  ...readdirSync(join(REPO, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

t.test('headings get the anchors GitHub gives them', async (t) => {
  const slugs = headingSlugs(
    [
      '# Parquet datasets ("Open the data")',
      '## Figures (`npm run bench -- parquet`)',
      '### Config file (`--config F` or `PMTAPE_CONFIG`)',
      '## Benchmark',
      '## Benchmark',
      '## Yes/no benchmark',
      '```',
      '## not a heading inside a code block',
      '```',
    ].join('\n'),
  );
  t.same(
    [...slugs],
    [
      'parquet-datasets-open-the-data',
      'figures-npm-run-bench----parquet',
      'config-file---config-f-or-pmtape_config',
      'benchmark',
      'benchmark-1',
      'yesno-benchmark',
    ],
  );
});

t.test('links inside code blocks and code spans are not links', async (t) => {
  const links = linksOf('[a](a.md) and `[b](b.md)`\n```\n[c](c.md)\n```\n[`d` e](d.md#x "title")');
  t.same(
    links.map((l) => l.target),
    ['a.md', 'd.md#x'],
  );
});

t.test('the checker reports a missing file, a missing anchor and an anchor into a non-page', async (t) => {
  const root = tempDir(t);
  mkdirSync(join(root, 'docs'));
  writeFileSync(join(root, 'docs', 'unit.service'), '[Unit]\n');
  writeFileSync(join(root, 'docs', 'a.md'), '# A\n\n## Real heading\n\n[back](../README.md#top)\n');
  writeFileSync(
    join(root, 'README.md'),
    [
      '# Top',
      '[ok](docs/a.md#real-heading) [ok file](docs/unit.service) [ok self](#top) [web](https://example.com/x#y)',
      '[gone](docs/missing.md)',
      '[bad anchor](docs/a.md#no-such-heading)',
      '[bad self](#nowhere)',
      '[anchor into a unit](docs/unit.service#x)',
    ].join('\n'),
  );
  const broken = brokenLinks(root, ['README.md', 'docs/a.md']);
  t.same(
    broken.map((b) => `${b.file}:${b.line} ${b.target}`),
    ['README.md:3 docs/missing.md', 'README.md:4 docs/a.md#no-such-heading', 'README.md:5 #nowhere', 'README.md:6 docs/unit.service#x'],
    'exactly the four broken links, with their lines',
  );
  t.match(broken[0].why, /docs\/missing\.md does not exist/);
  t.match(broken[1].why, /docs\/a\.md has no heading whose anchor is #no-such-heading/);
});

t.test('no link in README.md or docs/*.md points to a missing file or anchor', async (t) => {
  t.ok(pages.length > 5, `README and docs pages found (${pages.join(', ')})`);
  const links = pages.flatMap((p) => linksOf(readFileSync(join(REPO, p), 'utf8')));
  t.ok(links.length > 30, `the pages link each other (${links.length} links)`);
  const broken = brokenLinks(REPO, pages);
  t.same(
    broken.map((b) => `${b.file}:${b.line} ${b.target}: ${b.why}`),
    [],
    'no broken link',
  );
});

t.test('every docs page is linked from the README and links back to it', async (t) => {
  const readme = readFileSync(join(REPO, 'README.md'), 'utf8');
  for (const p of pages.filter((p) => p !== 'README.md')) {
    t.ok(
      linksOf(readme).some((l) => l.target.split('#')[0] === p),
      `README links ${p}`,
    );
    t.ok(
      linksOf(readFileSync(join(REPO, p), 'utf8')).some((l) => l.target.startsWith('../README.md')),
      `${p} links back to the README`,
    );
  }
});

t.test('the README is a guide of at most 15,000 bytes', (t) => {
  const bytes = statSync(join(REPO, 'README.md')).size;
  t.ok(bytes <= 15_000, `README.md is ${bytes} bytes (at most 15,000: move detail into docs/ and link it)`);
  t.end();
});
