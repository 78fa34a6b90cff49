/** RabbitMQ's default consumer_timeout: a delivery unacked this long closes its channel. */
export const BROKER_CONSUMER_TIMEOUT_MS = 30 * 60 * 1000;

/**
 * The longest run time a task may be given. With the child's kill grace
 * (5 s) and the outcome mark's retry (60 s) the delivery is settled before
 * the broker's consumer timeout closes the channel under it.
 */
export const MAX_TASK_TIMEOUT_MS = 28 * 60 * 1000;
