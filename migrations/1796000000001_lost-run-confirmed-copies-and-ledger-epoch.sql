-- Up Migration

-- The lost-run sweep's later columns and table, for a database that applied
-- the first version of 1796000000000 (resent and resent_at only). The
-- version that landed holds them already, so every statement here is
-- IF NOT EXISTS / ON CONFLICT DO NOTHING and does nothing there.
-- `resent` numbers the copies the sweep sends, counted before each is
-- published; `resent_confirmed` counts the copies the broker confirmed (a
-- run is given up after three of those); `resent_at` is when the last one
-- was counted.
ALTER TABLE scheduler_execution
  ADD COLUMN IF NOT EXISTS resent_confirmed integer NOT NULL DEFAULT 0;

-- Which database the run ledger lives in: its cluster, timeline and table.
-- The ledger's marks commit asynchronously, so a crash, a failover to a
-- standby or a restore from a dump can take back marks of runs that did
-- run; such a run then looks lost. The sweep fails, never sends again, a
-- run claimed before the ledger last changed hands (`changed_at`, recorded
-- by the first sweep that sees another key), or before the last crash.
-- IF NOT EXISTS also because a restore of an older dump with --clean leaves
-- this table (it is not in the dump) and its row, whose old table oid then
-- differs.
CREATE TABLE IF NOT EXISTS ledger_epoch (
  id integer PRIMARY KEY CHECK (id = 1),
  system_identifier text NOT NULL,
  timeline_id integer NOT NULL,
  ledger_oid bigint NOT NULL,
  changed_at timestamptz NOT NULL
);
INSERT INTO ledger_epoch (id, system_identifier, timeline_id, ledger_oid, changed_at)
SELECT 1, (pg_control_system()).system_identifier::text,
       -- The current timeline, from the WAL file being written.
       ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::int,
       'scheduler_execution'::regclass::oid::bigint,
       -- Runs open now may come from a restored older dump: the ledger's
       -- history before this point is not known to be whole.
       CASE WHEN EXISTS (SELECT 1 FROM scheduler_execution
                          WHERE status IN ('claimed', 'published', 'running', 'retrying'))
            THEN now() ELSE '-infinity' END
ON CONFLICT (id) DO NOTHING;

-- Down Migration

-- Nothing: 1796000000000's down drops what this may have added, whichever
-- version of it a database applied (dropping it here would make that fail).
SELECT 1;
