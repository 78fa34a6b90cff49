/**
 * The ledger rows (`scheduler_execution`) whose ids the SQL `ids` selects,
 * locked in ascending id order: the body of a `MATERIALIZED` CTE that a
 * statement's UPDATE then joins. Every statement that locks several runs
 * takes them in this one order, so two of them wait for each other at most,
 * never in a circle: the producer marking a minute's runs published and a
 * consumer starting a batch of them used to deadlock when the planner
 * walked their lists in the order given (PostgreSQL then aborts one).
 */
export function runsLockedInIdOrder(ids: string): string {
  return `SELECT e.id FROM scheduler_execution e
           WHERE e.id IN (${ids})
           ORDER BY e.id
             FOR UPDATE`;
}
