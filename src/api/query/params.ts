// Shared parsing of list and time parameters after schema validation: times in ISO 8601 UTC or epoch
// ms, start < end, and the ordering. Every failure is `invalid_parameter` naming the parameter.

import { invalidParameter } from '../../errors.js';
import { isTimeShaped, parseTimeParam } from '../../schema/time.js';

export interface ListParams {
  readonly limit: number;
  readonly cursor: string | undefined;
  /** Inclusive, epoch ms. */
  readonly start: number | undefined;
  /** Exclusive, epoch ms. */
  readonly end: number | undefined;
  readonly order: 'asc' | 'desc';
}

/** A whole validated querystring (a cursor is bound to the parameters it was made for). */
export type Query = Readonly<Record<string, unknown>>;

/** The list parameters as the routes' querystring schemas type them. */
export interface ListQuery {
  readonly limit?: number;
  readonly cursor?: string;
  readonly start_time?: string;
  readonly end_time?: string;
  readonly order?: 'asc' | 'desc';
}

/** A time parameter (ISO 8601 UTC or epoch ms) of a validated querystring, in epoch ms. */
export function timeParam<K extends string>(query: { readonly [k in K]?: unknown }, name: K): number | undefined {
  const v = query[name];
  if (v === undefined) return undefined;
  const t = typeof v === 'string' ? parseTimeParam(v) : null;
  if (t === null && typeof v === 'string' && isTimeShaped(v))
    throw invalidParameter(name, 'is not a real UTC time: a field is out of range (check the day of the month and the hour)');
  if (t === null) throw invalidParameter(name, 'must be an ISO 8601 UTC time (2026-07-26T12:00:00.000Z) or integer epoch milliseconds');
  return t;
}

export function listParams(query: ListQuery): ListParams {
  const start = timeParam(query, 'start_time');
  const end = timeParam(query, 'end_time');
  if (start !== undefined && end !== undefined && start >= end) throw invalidParameter('start_time', 'must be before end_time');
  return {
    limit: query.limit ?? 100,
    cursor: query.cursor,
    start,
    end,
    order: query.order === 'desc' ? 'desc' : 'asc',
  };
}

/** `as_of`: a time not in the future (the book at a future time is not known yet). */
export function asOfParam(query: { readonly as_of?: string }, now = Date.now()): number | undefined {
  const t = timeParam(query, 'as_of');
  if (t !== undefined && t > now) throw invalidParameter('as_of', 'must not be in the future (leave it out for the newest book)');
  return t;
}
