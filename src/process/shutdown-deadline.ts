import {KILL_GRACE_MS} from '../consumer/consumer.observer';

/** Time to close channels, connections and pools after the running task ended. */
export const SHUTDOWN_CLOSE_MARGIN_MS = 10_000;

/**
 * When a SIGTERM'd process gives up and exits 1: the running task's grace,
 * then the child's kill grace, then closing everything. Shorter would kill a
 * task the grace promised to wait for; docker-compose's stop_grace_period
 * must be at least this long, or Docker's SIGKILL comes first.
 */
export function shutdownDeadlineMs(config: {
  cronShutdownGraceMs: number;
}): number {
  return config.cronShutdownGraceMs + KILL_GRACE_MS + SHUTDOWN_CLOSE_MARGIN_MS;
}
