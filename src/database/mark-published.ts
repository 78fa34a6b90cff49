import {runsLockedInIdOrder} from './run-lock-order';

/**
 * Runs marked by one statement at most: its row locks are held only until
 * its commit, so a consumer starting one of them waits that long at most.
 */
export const MARK_PUBLISHED_CHUNK = 1000;

/** Anything that runs one parameterised statement: a pg Pool or client, or a repository's execute. */
export interface SqlRunner {
  query(text: string, values: unknown[]): Promise<unknown>;
}

/** PostgreSQL's code for a statement it aborted to break a deadlock. */
const DEADLOCK_DETECTED = '40P01';

/**
 * Records that the broker confirmed these runs, each with the moment its
 * confirm arrived. The consumer may already
 * have moved a fast run past "published" (running, even succeeded): its
 * status is then left alone, or the run would be stuck at "published".
 * Runs are marked in id order, in statements of MARK_PUBLISHED_CHUNK, each
 * locking its runs in that order (see runsLockedInIdOrder). A statement
 * that fails costs its own runs' marks only: the later ones still run (a
 * deadlock's victim once more), and the first error is thrown at the end.
 */
export async function markPublished(
  db: SqlRunner,
  confirmations: ReadonlyMap<number, Date>,
): Promise<void> {
  const inIdOrder = [...confirmations].sort(([a], [b]) => a - b);
  let failure: unknown;
  for (let i = 0; i < inIdOrder.length; i += MARK_PUBLISHED_CHUNK) {
    const chunk = inIdOrder.slice(i, i + MARK_PUBLISHED_CHUNK);
    const values = [chunk.map(([id]) => id), chunk.map(([, at]) => at)];
    await db
      .query(MARK_PUBLISHED, values)
      .catch(error =>
        (error as {code?: string}).code === DEADLOCK_DETECTED
          ? // A retry that fails too (in a caller's aborted transaction)
            // still reports the deadlock.
            db.query(MARK_PUBLISHED, values).catch(() => Promise.reject(error))
          : Promise.reject(error),
      )
      .catch(error => {
        failure ??= error;
      });
  }
  if (failure !== undefined) throw failure;
}

/** Exported for its test: the statement alone locks in id order. */
export const MARK_PUBLISHED = `
  WITH confirmed AS (
    SELECT * FROM unnest($1::bigint[], $2::timestamptz[]) AS c(id, confirmed_at)
  ), locked AS MATERIALIZED (
    ${runsLockedInIdOrder('SELECT id FROM confirmed')}
  )
  UPDATE scheduler_execution e
     SET published_at = COALESCE(e.published_at, c.confirmed_at),
         status = CASE WHEN e.status = 'claimed' THEN 'published' ELSE e.status END
    FROM confirmed c JOIN locked l ON l.id = c.id
   WHERE e.id = c.id`;
