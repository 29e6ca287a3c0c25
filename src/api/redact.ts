// Secrets out of log lines. A key belongs in the `Authorization` header, but users also paste it as
// `?api_key=` (the stream accepts that), into a path, or into any parameter; the request line is
// logged, so every place a URL or headers reach a log goes through these pure functions first.

/** Query parameters whose value is a credential, whatever the route. */
const SECRET_PARAMS = new Set(['api_key', 'apikey', 'key', 'token', 'access_token', 'authorization']);
/** Header names whose value is a credential. */
const SECRET_HEADERS = new Set(['authorization', 'proxy-authorization', 'cookie', 'x-api-key']);
/** A pmtape key anywhere in a text (keys.ts: `pmt_<12 hex>_<secret>`), percent-encoded or not. */
const KEY_TEXT = /pmt(?:_|%5f)[0-9a-f]{12}(?:_|%5f)[A-Za-z0-9_%-]+/gi;

export const REDACTED = '[redacted]';

function decodedName(name: string): string {
  try {
    return decodeURIComponent(name.replace(/\+/g, ' ')).toLowerCase();
  } catch {
    return name.toLowerCase();
  }
}

/**
 * A request URL fit for a log: the value of every credential parameter (`api_key`, `token`, ...,
 * however its name is percent-encoded) and any pmtape key in the path or elsewhere replaced.
 */
export function redactUrl(url: string): string {
  const q = url.indexOf('?');
  const path = q < 0 ? url : url.slice(0, q);
  let out = path.replace(KEY_TEXT, REDACTED);
  if (q >= 0) {
    const parts = url
      .slice(q + 1)
      .split('&')
      .map((p) => {
        const eq = p.indexOf('=');
        const name = eq < 0 ? p : p.slice(0, eq);
        if (eq >= 0 && SECRET_PARAMS.has(decodedName(name))) return `${name}=${REDACTED}`;
        return p.replace(KEY_TEXT, REDACTED);
      });
    out += `?${parts.join('&')}`;
  }
  return out;
}

/** Headers fit for a log: credential headers replaced (names kept), a key in any other value too. */
export function redactHeaders(headers: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(headers)) {
    if (SECRET_HEADERS.has(k.toLowerCase())) out[k] = REDACTED;
    else out[k] = typeof v === 'string' ? v.replace(KEY_TEXT, REDACTED) : v;
  }
  return out;
}
