/** Anything that runs one parameterised statement: a pg Pool or client, or a repository's execute. */
export interface SqlRunner {
  query(text: string, values: unknown[]): Promise<unknown>;
}

/**
 * Records that the broker confirmed these runs. The consumer may already
 * have moved a fast run past "published" (running, even succeeded): its
 * status is then left alone, or the run would be stuck at "published".
 */
export async function markPublished(
  db: SqlRunner,
  executionIds: number[],
  publishedAt: Date,
): Promise<void> {
  if (executionIds.length === 0) return;
  await db.query(
    `UPDATE scheduler_execution
        SET published_at = COALESCE(published_at, $2),
            status = CASE WHEN status = 'claimed' THEN 'published' ELSE status END
      WHERE id = ANY($1::bigint[])`,
    [executionIds, publishedAt],
  );
}
