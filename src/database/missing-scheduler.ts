import {HttpErrors} from '@loopback/rest';

/** The 404 of a scheduler id that names none. */
export function schedulerNotFound(id: number): Error {
  return new HttpErrors.NotFound(`Entity not found: Scheduler with id ${id}`);
}

/**
 * A run's foreign key found no scheduler: it was deleted after the request
 * read it (while it waited for the broker, or judged slots for seconds).
 */
export function isMissingScheduler(error: unknown): boolean {
  const pgError = error as {code?: string; table?: string};
  return pgError.code === '23503' && pgError.table === 'scheduler_execution';
}
