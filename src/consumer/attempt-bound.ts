import {OUTPUT_DRAIN_MS} from '../executors/child-process';
import {MAX_TASK_TIMEOUT_MS} from '../queue/consumer-timeout';
import {KILL_GRACE_MS} from './consumer.observer';
import {OUTCOME_MARK_RETRY_MS} from './task-consumer';

/**
 * How far a consumer host's clock may run behind the database's before a
 * run it is still running could look abandoned: its start and finish marks
 * carry the consumer's clock, the lost-run sweep compares with the
 * database's. Hosts kept by NTP are within a second.
 */
export const CLOCK_SKEW_ALLOWANCE_MS = 15 * 60 * 1000;

/**
 * The longest one attempt can stay `running` with a live consumer, counted
 * from its start mark: the start mark's own statement, the longest time
 * limit a task may have, the child's kill grace and output drain, then the
 * outcome mark's retries, whose last statement may run its whole statement
 * timeout. A run running longer has no consumer left to record its outcome.
 */
export function longestAttemptMs(statementTimeoutMs: number): number {
  return (
    statementTimeoutMs +
    MAX_TASK_TIMEOUT_MS +
    KILL_GRACE_MS +
    OUTPUT_DRAIN_MS +
    OUTCOME_MARK_RETRY_MS +
    statementTimeoutMs
  );
}
