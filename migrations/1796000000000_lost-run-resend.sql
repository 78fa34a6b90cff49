-- Up Migration

-- The lost-run sweep (src/producer/lost-run-sweep.ts): a run left published
-- or retrying with no message behind it (the broker lost it) is sent again.
-- `resent` numbers those copies and is carried by each one as `x-resent`; a
-- delivery older than the run's number is a copy the sweep replaced and never
-- starts, so a message thought lost that turns up after all does not run the
-- task a second time. The number is counted before its copy is published;
-- `resent_confirmed` counts the copies the broker confirmed (a run is given up
-- after three of those), `resent_at` is when the last one was counted.
ALTER TABLE scheduler_execution
  ADD COLUMN resent integer NOT NULL DEFAULT 0,
  ADD COLUMN resent_confirmed integer NOT NULL DEFAULT 0,
  ADD COLUMN resent_at timestamptz;

-- Which database the run ledger lives in: its cluster, timeline and table.
-- The ledger's marks commit asynchronously, so a crash, a failover to a
-- standby or a restore from a dump can take back marks of runs that did
-- run; such a run then looks lost. The sweep fails, never sends again, a
-- run claimed before the ledger last changed hands (`changed_at`, recorded
-- by the first sweep that sees another key), or before the last crash.
-- IF NOT EXISTS: a restore of an older dump with --clean leaves this table
-- (it is not in the dump) and its row, whose old table oid then differs.
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

DROP TABLE ledger_epoch;
ALTER TABLE scheduler_execution
  DROP COLUMN resent_at,
  DROP COLUMN resent_confirmed,
  DROP COLUMN resent;
