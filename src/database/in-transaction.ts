import type {Pool, PoolClient} from 'pg';

/**
 * Runs `work` on one pooled connection inside BEGIN … COMMIT, so its writes
 * land together or not at all: a process killed or a connection lost
 * between two of them leaves neither. Rolled back when `work` throws; a
 * connection that cannot even roll back is dropped from the pool, not
 * handed to the next caller mid-transaction.
 */
export async function inTransaction<T>(
  pool: Pool,
  work: (client: PoolClient) => Promise<T>,
): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    await client.query('BEGIN');
    const result = await work(client);
    await client.query('COMMIT');
    return result;
  } catch (error) {
    await client.query('ROLLBACK').catch((rollbackError: Error) => {
      broken = rollbackError;
    });
    throw error;
  } finally {
    client.release(broken);
  }
}
