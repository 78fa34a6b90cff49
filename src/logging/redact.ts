/** Keys whose values never reach a log line, at any depth. */
const SECRET_KEY =
  /authorization|password|passwd|secret|token|cookie|api[-_]?key/i;
const REDACTED = '[REDACTED]';
const MAX_DEPTH = 8;

/** Returns a copy of `value` with secret-looking keys masked. */
export function redactSecrets(value: unknown, depth = 0): unknown {
  if (value === null || typeof value !== 'object' || depth > MAX_DEPTH) {
    return value;
  }
  if (value instanceof Error || value instanceof Date) return value;
  if (Array.isArray(value)) {
    return value.map(item => redactSecrets(item, depth + 1));
  }
  const copy: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) {
    copy[key] = SECRET_KEY.test(key)
      ? REDACTED
      : redactSecrets(item, depth + 1);
  }
  return copy;
}

/** Masks secret-looking query parameters (`?access_token=...`) in a URL path. */
export function redactUrl(url: string): string {
  const queryStart = url.indexOf('?');
  if (queryStart < 0) return url;
  const params = new URLSearchParams(url.slice(queryStart + 1));
  let changed = false;
  for (const key of [...params.keys()]) {
    if (SECRET_KEY.test(key)) {
      params.set(key, REDACTED);
      changed = true;
    }
  }
  return changed ? `${url.slice(0, queryStart)}?${params.toString()}` : url;
}
