// Plain JSON Schema pieces, without TypeBox, that the families' response schemas and route
// parameters are made of. The families import only this module for their schemas, so the recorders
// and commands that look a family up never load TypeBox (the API types these through TypeBox).

export const str = { type: 'string' } as const;
export const strOrNull = { type: ['string', 'null'] } as const;
export const numOrNull = { type: ['number', 'null'] } as const;

/** Parameter shapes families choose from (routes type them through TypeBox in src/api/). */
export const paramShapes = {
  depth: { type: 'integer', minimum: 1, maximum: 1000, description: 'levels per side (default all)' },
  status: { type: 'string', enum: ['upcoming', 'open', 'closed', 'resolved', 'cancelled'] },
  window: { type: 'string', pattern: '^[0-9]{1,4}[smhd]$', maxLength: 8 },
  coin: { type: 'string', pattern: '^[a-z0-9]{1,16}$' },
} as const;

export const numLevels = { type: 'array', items: { type: 'array', items: { type: 'number' }, minItems: 2, maxItems: 2 } } as const;
export const outcomes = {
  type: 'array',
  items: { type: 'object', properties: { label: str, token_id: str }, required: ['label', 'token_id'] },
} as const;

export const gapSchema = {
  type: 'object',
  properties: { start: str, end: strOrNull, reason: str },
} as const;
