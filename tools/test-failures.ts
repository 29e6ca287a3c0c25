// After a red `npm test`: reprints every failed assertion at the END of the output, with the test
// file and the subtests it sits in. CI keeps only the tail of a long log, and tap's own stream puts a
// failure wherever its file happened to finish, so without this the one line that matters is lost.
// Reads tap's per-file results (`.tap/test-results/**/*.tap`); always exits 1, since it only runs
// after a failure (`tap || node dist/tools/test-failures.js`).

import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

const root = '.tap/test-results';
const maxDiagnosticLines = 40;

function tapFiles(dir: string): string[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  return names.flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? tapFiles(path) : name.endsWith('.tap') ? [path] : [];
  });
}

/** The innermost failed assertions of one file: their subtest path, line and YAML diagnostic. */
function failures(text: string): string[] {
  const lines = text.split('\n');
  const out: string[] = [];
  const subtests: string[] = []; // by indent level (4 spaces a level)
  const failuresBefore: number[] = []; // out.length when each open subtest began
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    const subtest = /^(\s*)# Subtest: (.*)$/.exec(line);
    if (subtest) {
      const level = subtest[1].length / 4;
      subtests.length = level;
      subtests[level] = subtest[2];
      failuresBefore[level] = out.length;
      continue;
    }
    const failed = /^(\s*)not ok \d+ - (.*)$/.exec(line);
    if (!failed) continue;
    const indent = failed[1];
    const level = indent.length / 4;
    // A subtest that failed because an assertion inside it failed is reported by that assertion;
    // one that failed on its own (a timeout, a throw) is reported here.
    const closesSubtest = subtests[level] !== undefined && failed[2].startsWith(subtests[level]);
    if (closesSubtest && out.length > failuresBefore[level]) continue;
    const block: string[] = [`✖ ${[...subtests.slice(0, level), failed[2]].join(' > ')}`];
    if (lines[i + 1]?.trim() === '---') {
      let j = i + 2;
      for (; j < lines.length && lines[j].trim() !== '...'; j++) {
        if (block.length <= maxDiagnosticLines) block.push(`    ${lines[j].slice(indent.length)}`);
      }
      if (block.length > maxDiagnosticLines) block.push('    (diagnostic cut short)');
      i = j;
    }
    out.push(block.join('\n'));
  }
  return out;
}

const found = tapFiles(root).flatMap((file) => {
  const text = readFileSync(file, 'utf8');
  const failed = failures(text);
  // A file killed by tap's timeout, or one whose process crashed, ends without its top-level plan.
  if (!/^1\.\.\d+/m.test(text))
    failed.push(
      `✖ the file ended early (timed out, killed or crashed); its last lines:\n${text.trimEnd().split('\n').slice(-15).join('\n')}`,
    );
  return failed.length === 0 ? [] : [`\n## ${relative(root, file).replace(/\.tap$/, '')}\n${failed.join('\n')}`];
});
process.stdout.write(
  found.length === 0
    ? '\n# the suite failed, but no failed assertion was recorded in .tap/test-results (a crash before tap ran?)\n'
    : `\n# FAILED: ${found.length} test file(s); the failed assertions again, so the end of the log says it\n${found.join('\n')}\n`,
);
process.exit(1);
