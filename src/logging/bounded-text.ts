/*
 * Text from outside (a message body, a reason) bounded for a log line or a
 * column: whatever it holds, writing it never throws and never fails there.
 */

/**
 * Text PostgreSQL's jsonb and text columns can hold: NUL (which jsonb
 * refuses) and lone surrogates (a cut through a pair) become U+FFFD.
 */
export function storableText(text: string): string {
  return text.replace(UNSTORABLE, '\uFFFD');
}

/** NUL, and a high surrogate without its low one or a low one without its high one. */
const UNSTORABLE =
  // eslint-disable-next-line no-control-regex -- NUL is what is looked for
  /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/**
 * A short text of any value for a log line or a column; never throws. A
 * string is itself, or (`asJson`) in JSON's quotes like any other value.
 */
export function textOf(
  value: unknown,
  max: number,
  asJson = false,
): string | undefined {
  if (value === undefined) return undefined;
  let text: string;
  if (typeof value === 'string' && !asJson) text = value;
  else {
    try {
      text = JSON.stringify(value) ?? String(typeof value);
    } catch {
      text = `[unreadable ${Array.isArray(value) ? 'list' : typeof value}]`;
    }
  }
  return storableText(text.length > max ? `${text.slice(0, max)}…[cut]` : text);
}
