import {TaskTimedOut} from '../executors/task-executor';

/**
 * The `reason` label of a permanent failure: a handful of kinds, never the
 * message itself (which holds ids, exit codes and user text).
 */
export type FailureReason =
  | 'timeout'
  | 'exit_code'
  | 'killed'
  | 'not_found'
  | 'not_startable'
  | 'poison'
  | 'crash_loop'
  | 'error';

export const FAILURE_REASONS: readonly FailureReason[] = [
  'timeout',
  'exit_code',
  'killed',
  'not_found',
  'not_startable',
  'poison',
  'crash_loop',
  'error',
];

export function failureReason(error: Error): FailureReason {
  if (error instanceof TaskTimedOut) return 'timeout';
  const message = error.message;
  if (/exited with code/.test(message)) return 'exit_code';
  if (/was killed by/.test(message)) return 'killed';
  if (/does not exist/.test(message)) return 'not_found';
  if (/executable|could not start/.test(message)) return 'not_startable';
  return 'error';
}
