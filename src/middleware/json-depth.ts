/** Deeper JSON than any request of this API needs, and far below what JSON.stringify can recurse through. */
export const MAX_JSON_DEPTH = 64;

export class JsonTooDeepError extends Error {
  override name = 'JsonTooDeepError';
  readonly statusCode = 400;
  constructor(readonly maxDepth: number) {
    super(`request body is nested deeper than ${maxDepth} levels`);
  }
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPENERS = new Set([0x7b, 0x5b]); // { [
const CLOSERS = new Set([0x7d, 0x5d]); // } ]

/**
 * Throws when the JSON text in `body` nests objects and arrays deeper than
 * `maxDepth`. JSON.parse reads any depth, but a value stored a few thousand
 * levels deep later breaks every response that serialises it (JSON.stringify
 * recurses and overflows the stack), so it must not get in. Runs on the raw
 * bytes, before parsing (body-parser's `verify` hook): one pass, no allocation.
 */
export function assertJsonDepth(body: Buffer, maxDepth = MAX_JSON_DEPTH): void {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < body.length; i++) {
    const byte = body[i];
    if (inString) {
      if (byte === BACKSLASH) i++;
      else if (byte === QUOTE) inString = false;
    } else if (byte === QUOTE) {
      inString = true;
    } else if (OPENERS.has(byte)) {
      if (++depth > maxDepth) throw new JsonTooDeepError(maxDepth);
    } else if (CLOSERS.has(byte)) {
      depth--;
    }
  }
}
