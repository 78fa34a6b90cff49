/** What an echoed credential becomes in the ledger. */
export const REDACTED = '[redacted]';

/** Shorter credential parts are too likely to be ordinary text. */
const MIN_PART_LENGTH = 6;

/**
 * The forms in which a receiver may echo a write-only header value back:
 * the value itself, its credential part after a scheme (`Bearer x`), and
 * each as it reads inside a JSON string. Longest first, so a whole value
 * is replaced before its parts.
 */
function echoedForms(values: Iterable<string>): string[] {
  const forms = new Set<string>();
  for (const value of values) {
    const parts = [value, value.slice(value.indexOf(' ') + 1)];
    for (const part of parts) {
      const trimmed = part.trim();
      if (trimmed.length < MIN_PART_LENGTH) continue;
      forms.add(trimmed);
      forms.add(JSON.stringify(trimmed).slice(1, -1));
    }
  }
  return [...forms].sort((a, b) => b.length - a.length);
}

/**
 * Replaces every echo of a write-only header value in a response body
 * before it is stored where the API shows it (the run ledger): a target
 * that echoes its request (a debug endpoint, httpbin's /anything) must not
 * turn a credential into readable run output.
 */
export function redactEchoedSecrets(
  text: string,
  secretValues: Iterable<string>,
): string {
  let redacted = text;
  for (const form of echoedForms(secretValues)) {
    redacted = redacted.replaceAll(form, REDACTED);
  }
  return redacted;
}
