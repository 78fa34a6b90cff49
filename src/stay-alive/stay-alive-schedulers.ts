import type {Pool} from 'pg';

/** What the supervisor needs to run one active stay-alive scheduler. */
export interface StayAliveScheduler {
  id: number;
  workerId: number;
  command: string;
  params: Record<string, unknown>;
}

/**
 * Active stay-alive schedulers with their worker's command. A scheduler whose
 * worker row is gone has nothing to run and is left out.
 */
export async function loadStayAliveSchedulers(
  pool: Pool,
): Promise<StayAliveScheduler[]> {
  const {rows} = await pool.query<{
    id: number;
    worker_id: number;
    command: string;
    params: Record<string, unknown>;
  }>(
    `SELECT s.id, s.worker_id, w.command, s.params
       FROM scheduler s
       JOIN worker w ON w.id = s.worker_id
      WHERE s.status AND s.stay_alive
      ORDER BY s.id`,
  );
  return rows.map(row => ({
    id: row.id,
    workerId: row.worker_id,
    command: row.command,
    params: row.params ?? {},
  }));
}
