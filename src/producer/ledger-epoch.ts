import type {Pool} from 'pg';

/**
 * Before this moment (by the database's clock) the ledger may have lost
 * marks: PostgreSQL's last crash recovery (which resets `pg_stat_wal`'s
 * statistics; a clean restart keeps them), or the last time the ledger
 * changed hands (see recordLedgerEpoch).
 */
export const LEDGER_HORIZON = `GREATEST((SELECT stats_reset FROM pg_stat_wal),
                                 (SELECT changed_at FROM ledger_epoch WHERE id = 1))`;

/** The ledger's cluster, timeline (from the WAL file being written) and table. */
const EPOCH_KEY = `(pg_control_system()).system_identifier::text,
  ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::int,
  'scheduler_execution'::regclass::oid::bigint`;

/**
 * Records a new ledger epoch when the database the ledger lives in is not
 * the one seen before: another cluster (a restore elsewhere), another
 * timeline (a standby promoted), another table (a restore with --clean).
 * Each of these can take back marks the old one had committed; a run
 * claimed before the change may have run. Returns true when it changed.
 */
export async function recordLedgerEpoch(pool: Pool): Promise<boolean> {
  // Read first: the usual answer (no change) then writes nothing.
  const {rows} = await pool.query<{same: boolean}>(
    `SELECT (l.system_identifier, l.timeline_id, l.ledger_oid)
              IS NOT DISTINCT FROM (${EPOCH_KEY}) AS same
       FROM (SELECT 1) AS one LEFT JOIN ledger_epoch l ON l.id = 1`,
  );
  if (rows[0]?.same) return false;
  const {rowCount} = await pool.query(
    `INSERT INTO ledger_epoch AS l (id, system_identifier, timeline_id, ledger_oid, changed_at)
     SELECT 1, ${EPOCH_KEY}, now()
     ON CONFLICT (id) DO UPDATE
        SET system_identifier = EXCLUDED.system_identifier,
            timeline_id = EXCLUDED.timeline_id,
            ledger_oid = EXCLUDED.ledger_oid,
            changed_at = now()
      WHERE (l.system_identifier, l.timeline_id, l.ledger_oid)
            IS DISTINCT FROM (EXCLUDED.system_identifier, EXCLUDED.timeline_id, EXCLUDED.ledger_oid)`,
  );
  return (rowCount ?? 0) > 0;
}
