// How a test gets an external tool: through its toolchain's locate() (tools/toolchains/), never by
// guessing a path. Missing, it fails the test under CI (a CI run that skipped it would prove nothing)
// and skips it elsewhere, with the same message saying how to get the tool.

import { findToolchain } from '../../tools/toolchains/setup.js';
import { underCi } from '../../tools/toolchains/toolchain.js';

interface TapLike {
  fail(message: string): unknown;
  pass(message: string, extra: { skip: string }): unknown;
}

/** The tool's path (see its toolchain module), or null after failing (CI) or skipping `t`. */
export function requireTool(t: TapLike, name: string): string | null {
  const tc = findToolchain(name);
  if (!tc) throw new Error(`no toolchain named ${name} in tools/toolchains/setup.ts`);
  const found = tc.locate();
  if (found !== null) return found;
  const message = `${name} missing (${tc.describe}): run \`node dist/tools/toolchains/setup.js ${name}\` (npm test does) and read its message`;
  if (underCi()) t.fail(`${message}; under CI a missing tool fails the test`);
  else t.pass(name, { skip: message }); // reported as "ok - <name> # SKIP <message>"
  return null;
}
