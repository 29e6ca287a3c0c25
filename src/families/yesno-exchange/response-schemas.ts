// The yes/no family's response schemas (API.md §4): its market record and the snapshot of one book,
// prices and sizes as the venue's own text.

import { str, strOrNull } from '../json-parts.js';

export const yesnoMarketSchema = {
  type: 'object',
  properties: {
    ticker: str,
    event_ticker: str,
    series_ticker: str,
    title: str,
    status: str,
    open_time: strOrNull,
    close_time: strOrNull,
    result: str,
    native: {},
  },
} as const;

const ladderText = { type: 'object', properties: { prices: { type: 'array', items: str }, sizes: { type: 'array', items: str } } } as const;

export const yesnoSnapshotSchema = {
  type: 'object',
  properties: {
    ticker: str,
    observed_time: str,
    receive_time: str,
    seq: { type: 'integer' },
    units: str,
    yes: ladderText,
    no: ladderText,
    levels: { type: 'object', properties: { yes: { type: 'integer' }, no: { type: 'integer' } } },
    stale: { type: 'boolean' },
  },
} as const;
