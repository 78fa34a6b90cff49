/**
 * What a worker scheduler's params may be called. Each entry reaches the
 * worker as one `key=value` argument, so a key such as `--flag` would become
 * an option of the program, and a second `scheduler_id` would shadow the one
 * the service appends. Pure: shared by the API (422) and the message codec
 * (a stored row written by another writer is parked, never run).
 */
export const WORKER_PARAM_KEY = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** The one argument name the service sets itself. */
export const RESERVED_WORKER_PARAM = 'scheduler_id';

/** One message per bad key; an empty list means the params are fine. */
export function workerParamKeyProblems(params: object): string[] {
  const problems: string[] = [];
  for (const key of Object.keys(params)) {
    if (!WORKER_PARAM_KEY.test(key)) {
      problems.push(
        `worker param key ${JSON.stringify(key.slice(0, 64))} must match ${WORKER_PARAM_KEY.source} (letters, digits and _, not starting with a digit)`,
      );
    } else if (key === RESERVED_WORKER_PARAM) {
      problems.push(
        `worker param key "${RESERVED_WORKER_PARAM}" is reserved: the service passes the scheduler's id itself`,
      );
    }
  }
  return problems;
}
