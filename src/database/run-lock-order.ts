/**
 * The ledger rows (`scheduler_execution`) whose ids the SQL `ids` selects,
 * locked in ascending id order: the body of a CTE (PostgreSQL never folds a
 * locking one into the statement) that the statement's UPDATE then joins, so
 * it changes only runs the CTE has locked, and the CTE locks in order. The
 * statements that lock several runs and wait (the producer marking a
 * minute's runs published, a consumer starting a batch of them, and the
 * cascade of a scheduler's delete, whose trigger locks its runs the same
 * way) take them in this one order, so two of them wait for each other at
 * most, never in a circle. The first two used to deadlock when the planner
 * walked their lists in the order given (PostgreSQL then aborts one). The
 * sweeper takes its runs and their schedulers with SKIP LOCKED, so it never
 * waits for them. The lock is the one the UPDATE takes itself, not the
 * stronger key lock a delete needs. A new statement that locks several runs
 * and waits must take them this way too.
 */
export function runsLockedInIdOrder(ids: string): string {
  return `SELECT e.id FROM scheduler_execution e
           WHERE e.id IN (${ids})
           ORDER BY e.id
             FOR NO KEY UPDATE`;
}
