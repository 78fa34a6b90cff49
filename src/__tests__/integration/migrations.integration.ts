import {expect} from '@loopback/testlab';
import {dropDatabase} from '../../database/database-admin';
import {readdirSync} from 'node:fs';
import type {Client} from 'pg';
import {MIGRATIONS_DIR, migrateDatabase} from '../../database/migration-runner';
import {RESOURCES} from '../../resources';
import {LogCapture} from '../fixtures/log-capture';
import {
  TEST_DATABASE_URL,
  uniqueDatabaseUrl,
  withClient,
} from '../fixtures/test-database';

async function schemaSnapshot(databaseUrl: string): Promise<unknown[]> {
  return withClient(databaseUrl, async client => {
    const {rows} = await client.query(`
      SELECT 'column' AS kind, table_name || '.' || column_name || ':' || data_type AS item
        FROM information_schema.columns WHERE table_schema = 'public'
      UNION ALL
      SELECT 'index', indexname || ':' || indexdef FROM pg_indexes WHERE schemaname = 'public'
      UNION ALL
      SELECT 'constraint', conname || ':' || pg_get_constraintdef(oid)
        FROM pg_constraint WHERE connamespace = 'public'::regnamespace
      ORDER BY 1, 2`);
    return rows;
  });
}

describe('migrations (npm run migrate)', () => {
  const databaseUrl = uniqueDatabaseUrl('migrate');
  after(() => dropDatabase(databaseUrl));

  it('creates a missing database, applies every migration, and a second run changes nothing', async () => {
    const logs = new LogCapture();
    const first = await migrateDatabase(databaseUrl, logs.logger);
    expect(first.databaseCreated).to.be.true();
    expect(first.applied.length).to.be.greaterThan(0);
    const before = await schemaSnapshot(databaseUrl);

    const second = await migrateDatabase(databaseUrl, logs.logger);
    expect(second).to.deepEqual({databaseCreated: false, applied: []});
    expect(await schemaSnapshot(databaseUrl)).to.deepEqual(before);
    expect(logs.find('Migrations applied').map(r => r.count)).to.deepEqual([
      first.applied.length,
      0,
    ]);
  });

  it('keeps the zone names the scheduler check reads in line with PostgreSQL, and checks a name they lack the slow way', async () => {
    // Runs after the first test: the database is migrated.
    const count = (client: Client, from: string) =>
      client
        .query<{n: number}>(`SELECT count(*)::int AS n FROM ${from}`)
        .then(result => result.rows[0].n);
    const known = (client: Client, zone: string | null) =>
      client
        .query<{known: boolean}>('SELECT is_known_time_zone($1) AS known', [
          zone,
        ])
        .then(result => result.rows[0].known);
    const insertZoned = (client: Client, zone: string) =>
      client.query(
        `WITH r AS (INSERT INTO report (name, controller) VALUES ('r', 'R') RETURNING id)
         INSERT INTO scheduler (description, schedule, report_id, stay_alive, timezone)
         SELECT 'zoned', '0 9 * * *', r.id, false, $1 FROM r`,
        [zone],
      );
    await withClient(databaseUrl, async client => {
      expect(await count(client, 'known_time_zone')).to.equal(
        await count(
          client,
          '(SELECT DISTINCT lower(name) FROM pg_timezone_names) AS listed',
        ),
      );
      // As after a zone data upgrade: a name added, one withdrawn.
      await client.query(
        `DELETE FROM known_time_zone WHERE name = 'europe/berlin'`,
      );
      await client.query(
        `INSERT INTO known_time_zone (name) VALUES ('mars/olympus')`,
      );
      expect(await known(client, 'Europe/Berlin')).to.be.true();
      expect(await known(client, null)).to.be.false();
      await insertZoned(client, 'Europe/Berlin');
      for (const refused of ['Europe/Berln', 'posix/Europe/Berlin', 'Factory'])
        await expect(insertZoned(client, refused)).to.be.rejectedWith({
          constraint: 'scheduler_timezone_known',
        });
    });

    const logs = new LogCapture();
    await migrateDatabase(databaseUrl, logs.logger);
    expect(logs.find('Time zone names brought up to date')).to.containDeep([
      {added: 1, removed: 1},
    ]);
    await withClient(databaseUrl, async client => {
      expect(await known(client, 'europe/BERLIN')).to.be.true();
      await expect(insertZoned(client, 'Mars/Olympus')).to.be.rejectedWith(
        /unknown time zone "Mars\/Olympus"/,
      );
      const {rows} = await client.query<{name: string}>(
        `SELECT name FROM known_time_zone
          WHERE name IN ('europe/berlin', 'mars/olympus')`,
      );
      expect(rows.map(row => row.name)).to.deepEqual(['europe/berlin']);
    });
  });

  it('applies each migration exactly once when two runs race (advisory lock)', async () => {
    const raced = uniqueDatabaseUrl('race');
    try {
      const logs = new LogCapture();
      const results = await Promise.all([
        migrateDatabase(raced, logs.logger),
        migrateDatabase(raced, logs.logger),
      ]);
      const migrationFiles = readdirSync(MIGRATIONS_DIR)
        .filter(file => file.endsWith('.sql'))
        .map(file => file.replace(/\.sql$/, ''));
      expect(results.flatMap(r => r.applied).sort()).to.deepEqual(
        migrationFiles.sort(),
      );
      expect(results.filter(r => r.databaseCreated)).to.have.length(1);
    } finally {
      await dropDatabase(raced);
    }
  });
});

/**
 * Columns no API model exposes on purpose: kept by the database and the
 * auth layer, never read or written through the resource.
 */
const SERVER_ONLY_COLUMNS: Record<string, string[]> = {
  app_user: ['tokens_valid_after'],
  // juggler models have a trigger() method: the column is read with SQL
  // (GET /schedulers/{id}/executions) and never a model property.
  scheduler_execution: ['trigger'],
};

describe('schema', () => {
  for (const {model} of RESOURCES) {
    const table = model.definition.settings.postgresql.table as string;

    it(`maps every ${model.name} property to a column of "${table}" and back`, async () => {
      const columns = await withClient(TEST_DATABASE_URL, async client => {
        const {rows} = await client.query(
          `SELECT column_name, data_type FROM information_schema.columns
            WHERE table_schema = 'public' AND table_name = $1`,
          [table],
        );
        return new Map(
          rows.map(r => [r.column_name as string, r.data_type as string]),
        );
      });
      const properties = Object.entries(model.definition.properties);
      for (const [name, definition] of properties) {
        const mapping = definition.postgresql as {
          columnName: string;
          dataType: string;
        };
        expect(mapping?.columnName).to.equal(name);
        expect(columns.has(mapping.columnName)).to.be.true();
        expect(columns.get(mapping.columnName)).to.equal(mapping.dataType);
      }
      for (const column of SERVER_ONLY_COLUMNS[table] ?? []) {
        columns.delete(column);
      }
      expect([...columns.keys()].sort()).to.deepEqual(
        properties.map(([n]) => n).sort(),
      );
    });
  }

  it('rejects a second claim of the same run as a duplicate key', async () => {
    await withClient(TEST_DATABASE_URL, async client => {
      const {rows} = await client.query(
        `WITH r AS (INSERT INTO report (name, controller) VALUES ('r', 'R') RETURNING id)
         INSERT INTO scheduler (description, schedule, report_id) SELECT 's', '* * * * *', id FROM r RETURNING id`,
      );
      const claim = `INSERT INTO scheduler_execution (scheduler_id, execution_key, container_id)
                     VALUES ($1, 'cron-2026-11-21-17-05', 'host-1')`;
      await client.query(claim, [rows[0].id]);
      await expect(client.query(claim, [rows[0].id])).to.be.rejectedWith({
        code: '23505',
      });
      await client.query('DELETE FROM scheduler WHERE id = $1', [rows[0].id]);
      const left = await client.query(
        'SELECT count(*)::int AS n FROM scheduler_execution WHERE scheduler_id = $1',
        [rows[0].id],
      );
      expect(left.rows[0].n).to.equal(0);
    });
  });

  it('refuses a claim for a scheduler that does not exist (foreign key)', async () => {
    await withClient(TEST_DATABASE_URL, async client => {
      await expect(
        client.query(
          `INSERT INTO scheduler_execution (scheduler_id, execution_key, container_id)
           VALUES (2147483000, 'cron-2026-11-21-17-05', 'h')`,
        ),
      ).to.be.rejectedWith({code: '23503'});
    });
  });

  it('keeps the scheduler rules true for writers other than the API (check constraints)', async () => {
    await withClient(TEST_DATABASE_URL, async client => {
      const insert = (values: string) =>
        client.query(
          `INSERT INTO scheduler (description, schedule, date_time, report_id, worker_id, stay_alive) VALUES ${values}`,
        );
      await expect(
        insert(`('two kinds', '* * * * *', NULL, 1, 2, false)`),
      ).to.be.rejectedWith({
        code: '23514',
        constraint: 'scheduler_one_task',
      });
      await expect(
        insert(`('no timing', NULL, NULL, 900001, NULL, false)`),
      ).to.be.rejectedWith({
        code: '23514',
        constraint: 'scheduler_timing',
      });
      await expect(
        insert(`('stay alive report', NULL, NULL, 900001, NULL, true)`),
      ).to.be.rejectedWith({code: '23514', constraint: 'scheduler_timing'});
    });
  });

  it('serves the 30-day cleanup from an index on executed_at', async () => {
    const plan = await withClient(TEST_DATABASE_URL, async client => {
      await client.query('SET enable_seqscan = off');
      const {rows} = await client.query(
        `EXPLAIN DELETE FROM scheduler_execution WHERE executed_at < now() - interval '30 days'`,
      );
      return rows.map(r => r['QUERY PLAN']).join('\n');
    });
    expect(plan).to.match(/scheduler_execution_executed_at_idx/);
  });

  it('sets updated_at on every update', async () => {
    await withClient(TEST_DATABASE_URL, async client => {
      const {rows} = await client.query(
        `WITH r AS (INSERT INTO report (name, controller) VALUES ('r', 'R') RETURNING id)
         INSERT INTO scheduler (description, schedule, report_id, created_at, updated_at)
         SELECT 'u', '* * * * *', id, now() - interval '1 day', now() - interval '1 day' FROM r
         RETURNING id, updated_at`,
      );
      const after = await client.query(
        `UPDATE scheduler SET description = 'v' WHERE id = $1 RETURNING updated_at`,
        [rows[0].id],
      );
      expect(after.rows[0].updated_at.getTime()).to.be.greaterThan(
        rows[0].updated_at.getTime(),
      );
    });
  });
});
