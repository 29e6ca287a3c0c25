// Keeps the hidden classes of Node's `process.nextTick` records alive for the life of the process.
//
// Why: every `nextTick` builds its record with an object literal keyed by two internal symbols
// (`{ [async_id_symbol], [trigger_async_id_symbol], callback, args }`). V8 holds the transitions
// from the literal's root map weakly, and a tick record lives for microseconds, so a full garbage
// collection that finds none alive frees those maps; the next record makes new ones. Two such
// collections and the literal's property-define sites in `nextTick` are megamorphic for good: each
// record is then built in the runtime (`DefineKeyedOwnPropertyInLiteral`), far slower than the
// inline path. A bare Fastify process rarely gets there; `serve` always did while loading its modules
// and compiling its route schemas (`%DebugPrint(process.nextTick)` showed the slots MEGAMORPHIC).
// Node's streams and HTTP code take several ticks a request, so every request paid it (the cost
// measured: docs/benchmarks.md, "Figures behind the code"). Every CLI process gets the fix (the
// recorders too), though only the API's cost was measured.
//
// How: one real tick record is captured (an async-hooks `init` sees it, enabled for that single call
// only) and kept, so its maps, and with them the transitions, can never be collected. Imported first
// by the CLI, before anything else loads. test/tick-shape.test.ts shows the sites staying monomorphic.

import { createHook } from 'node:async_hooks';

let kept: object | null = null;

/** The tick record kept alive (null only if the capture failed, e.g. a runtime without TickObject). */
export function keptTickRecord(): object | null {
  return kept;
}

/** Captures and keeps one `process.nextTick` record; idempotent. */
export function keepTickShape(): void {
  if (kept !== null) return;
  const hook = createHook({
    init(_id, type, _trigger, resource) {
      if (type === 'TickObject' && kept === null) kept = resource;
    },
  });
  hook.enable();
  try {
    process.nextTick(noop); // `init` runs synchronously inside this call
  } finally {
    hook.disable();
  }
}

function noop(): void {}

keepTickShape();
