// A market's lifecycle and result in one shape for every family: what the candles route and the
// replay's end line say beside the data, and what the `markets` dataset holds. Read from the
// market's own fields (the union is discriminated by its shape), so no family is named here.

import type { Market } from './market.js';

export interface MarketOutcome {
  readonly status: string | null;
  /** `resolved`, `push`, `pending`, `disputed`, or null while unresolved (yes/no: `resolved` once `result` is set). */
  readonly resolution: string | null;
  /** The winning outcome's label (yes/no: `yes` or `no`), null when none (yet). */
  readonly winning_outcome: string | null;
  /** Epoch ms, null when not known. */
  readonly resolved_time: number | null;
}

export const NO_OUTCOME: MarketOutcome = { status: null, resolution: null, winning_outcome: null, resolved_time: null };

export function marketOutcome(m: Market | null): MarketOutcome {
  if (m === null) return NO_OUTCOME;
  if ('result' in m) {
    // The yes/no venue's `result` is `yes`, `no` or empty; it has no resolution time of its own.
    const r = m.result === '' ? null : m.result;
    return { status: m.status, resolution: r === null ? null : 'resolved', winning_outcome: r, resolved_time: null };
  }
  // A catalogue entry written before these fields existed (or by an import) may lack them: absent is unknown, never a crash.
  const fields = m as Partial<typeof m>;
  return {
    status: fields.status ?? null,
    resolution: fields.resolution ?? null,
    winning_outcome: fields.winning_outcome ?? null,
    resolved_time: typeof fields.resolved_time === 'number' && Number.isFinite(fields.resolved_time) ? fields.resolved_time : null,
  };
}
