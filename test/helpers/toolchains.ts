// How a test finds an external tool: its path, or null after failing (under CI) or skipping (else)
// with the toolchain's message, so a missing tool is never a silent pass.

import type { Test } from 'tap';
import { TOOLCHAINS, underCI } from '../../tools/toolchains/setup.js';

export function requireTool(t: Test, name: string): string | null {
  const tc = TOOLCHAINS.find((x) => x.name === name);
  if (!tc) throw new Error(`no toolchain named ${name}`);
  const path = tc.locate();
  if (path) return path;
  const why = `${tc.describe} is not installed: run \`node dist/tools/toolchains/setup.js\` (npm test does)`;
  if (underCI()) t.fail(why);
  else t.pass(why, { skip: why });
  return null;
}
