// Strict integer query parameters. Ajv's type coercion (which the routes need: a query string is
// text) turns any text JavaScript reads as a number into one: `limit=0x10` became 16, `limit=1e3`
// 1000 and `limit=%205` (" 5") 5, all answered 200. Every querystring validator of the app is
// wrapped here: a parameter its schema types as an integer (or number) must be plain decimal text
// before Ajv sees it, else the request is a 400 naming the parameter. Done in the compiler, once per
// route, so no route needs its own hook and a new route cannot forget it.

import { createRequire } from 'node:module';
import type { FastifyServerOptions } from 'fastify';

/** Decimal digits with an optional minus sign (a minimum in the schema then names the range). */
const DECIMAL_INTEGER = /^-?[0-9]{1,16}$/;

interface AjvLikeError {
  instancePath: string;
  keyword: string;
  params: Record<string, unknown>;
  message: string;
}

type Validator = ((data: unknown, ctx?: unknown) => unknown) & { errors?: unknown; schemaEnv?: unknown };
type RouteSchema = { schema: unknown; method: string; url: string; httpPart: string };
type BuildValidator = (externalSchemas: unknown, options: unknown) => (route: RouteSchema) => Validator;

const isNumeric = (t: unknown): boolean =>
  t === 'integer' || t === 'number' || (Array.isArray(t) && t.some((x) => x === 'integer' || x === 'number'));

/** Names of the properties a querystring schema types as numbers. */
export function numericProps(schema: unknown): string[] {
  const props = (schema as { properties?: Record<string, { type?: unknown }> } | null)?.properties;
  if (!props || typeof props !== 'object') return [];
  return Object.entries(props)
    .filter(([, s]) => s !== null && typeof s === 'object' && isNumeric(s.type))
    .map(([k]) => k);
}

/** The first numeric parameter whose text is not a plain decimal integer, as an Ajv-style error. */
export function strictIntegerError(query: unknown, names: readonly string[]): AjvLikeError | null {
  if (query === null || typeof query !== 'object') return null;
  const q = query as Record<string, unknown>;
  for (const name of names) {
    const v = q[name];
    if (typeof v === 'string' && !DECIMAL_INTEGER.test(v)) {
      return {
        instancePath: `/${name}`,
        keyword: 'format',
        params: { format: 'decimal integer' },
        message: 'must be a decimal integer written with digits only (no ' + ', spaces, exponent or hex), like 100',
      };
    }
  }
  return null;
}

/** Wraps a compiled querystring validator with the strict integer check (other parts unchanged). */
export function strictQueryValidator(validate: Validator, names: readonly string[]): Validator {
  if (names.length === 0) return validate;
  const wrapped: Validator = (data: unknown, ctx?: unknown) => {
    const bad = strictIntegerError(data, names);
    if (bad) {
      wrapped.errors = [bad];
      return false;
    }
    const ok = ctx === undefined ? validate(data) : validate(data, ctx);
    wrapped.errors = validate.errors;
    return ok;
  };
  // Fastify passes the parent object (so Ajv may coerce in place) only to validators that carry it.
  if (validate.schemaEnv !== undefined) wrapped.schemaEnv = validate.schemaEnv;
  return wrapped;
}

/**
 * Fastify's own validator factory (its dependency @fastify/ajv-compiler, resolved from fastify
 * itself, so no second copy), with every querystring validator wrapped.
 */
export function strictSchemaController(): NonNullable<FastifyServerOptions['schemaController']> {
  const fromFastify = createRequire(createRequire(import.meta.url).resolve('fastify'));
  const base = (fromFastify('@fastify/ajv-compiler') as () => BuildValidator)();
  const buildValidator: BuildValidator = (externalSchemas, options) => {
    const compile = base(externalSchemas, options);
    return (route) => {
      const v = compile(route);
      return route.httpPart === 'querystring' ? strictQueryValidator(v, numericProps(route.schema)) : v;
    };
  };
  return { compilersFactory: { buildValidator } } as unknown as NonNullable<FastifyServerOptions['schemaController']>;
}
