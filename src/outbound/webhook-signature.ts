import {createHmac, randomBytes} from 'node:crypto';

/** Standard Webhooks secrets: `whsec_` and the base64 of the key bytes. */
export const SECRET_PREFIX = 'whsec_';

/** A new signing secret: 32 random bytes. */
export function newSigningSecret(): string {
  return SECRET_PREFIX + randomBytes(32).toString('base64');
}

function keyOf(secret: string): Buffer {
  return Buffer.from(
    secret.startsWith(SECRET_PREFIX)
      ? secret.slice(SECRET_PREFIX.length)
      : secret,
    'base64',
  );
}

/** `v1,` and the base64 HMAC-SHA256 of `id.timestamp.body` under one secret. */
export function signature(
  secret: string,
  id: string,
  timestampSeconds: number,
  body: string,
): string {
  const mac = createHmac('sha256', keyOf(secret))
    .update(`${id}.${timestampSeconds}.${body}`)
    .digest('base64');
  return `v1,${mac}`;
}

/**
 * The three Standard Webhooks headers of one attempt. During a rotation
 * window every given secret signs, space-separated, so a receiver that
 * still holds the old secret keeps verifying.
 */
export function webhookHeaders(
  secrets: string[],
  id: string,
  at: Date,
  body: string,
): Record<string, string> {
  const timestamp = Math.floor(at.getTime() / 1000);
  return {
    'webhook-id': id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': secrets
      .map(secret => signature(secret, id, timestamp, body))
      .join(' '),
  };
}
