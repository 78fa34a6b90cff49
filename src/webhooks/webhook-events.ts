/**
 * The events an endpoint may subscribe to. Runs and scheduler writes are
 * raised by triggers in the transaction of the change (migration
 * 1795800000000_webhooks); notices (issue 26) when their notification row
 * is written.
 */
export const WEBHOOK_EVENTS = [
  'run.succeeded',
  'run.failed',
  'run.parked',
  'run.skipped',
  'scheduler.created',
  'scheduler.updated',
  'scheduler.deleted',
  'notice.failure',
  'notice.digest',
  'notice.recovery',
  'notice.missed_runs',
] as const;
export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number];

/** Sent by POST /webhooks/{id}/test only; never subscribed to. */
export const PING_EVENT = 'ping';

/**
 * An endpoint that failed this many deliveries in a row (each after its
 * retries) is disabled, with a notice to its owner.
 */
export const MAX_CONSECUTIVE_FAILURES = 20;

/** Time limit of one delivery attempt. */
export const WEBHOOK_TIMEOUT_MS = 10_000;
