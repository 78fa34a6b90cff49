/** Anything that runs one parameterised statement: a pg Pool or client, or a repository's execute. */
export interface SqlRunner {
  query(text: string, values: unknown[]): Promise<unknown>;
}

/**
 * Records that the broker confirmed these runs, each with the moment its
 * confirm arrived. The consumer may already
 * have moved a fast run past "published" (running, even succeeded): its
 * status is then left alone, or the run would be stuck at "published".
 */
export async function markPublished(
  db: SqlRunner,
  confirmations: ReadonlyMap<number, Date>,
): Promise<void> {
  if (confirmations.size === 0) return;
  await db.query(
    `UPDATE scheduler_execution e
        SET published_at = COALESCE(e.published_at, c.confirmed_at),
            status = CASE WHEN e.status = 'claimed' THEN 'published' ELSE e.status END
       FROM unnest($1::bigint[], $2::timestamptz[]) AS c(id, confirmed_at)
      WHERE e.id = c.id`,
    [[...confirmations.keys()], [...confirmations.values()]],
  );
}
