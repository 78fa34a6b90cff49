import {expect} from '@loopback/testlab';
import {createPool} from '../../database/pg-pool';
import {createProducerPool} from '../../producer/producer-pool';
import {LogCapture} from '../fixtures/log-capture';
import {eventually} from '../fixtures/test-consumer';
import {sql, TEST_DATABASE_URL} from '../fixtures/test-database';

/**
 * A connection lost while a client is checked out (a transaction waiting on
 * a broker confirm or an SMTP answer when PgBouncer or PostgreSQL restarts)
 * must fail that client's work, never the process: pg emits 'error' on the
 * client, and an 'error' without a listener is an uncaught exception. The
 * chaos fleet profile saw consumers exit with code 1 that way.
 */
describe('database pool', () => {
  it('logs a connection lost while its client is checked out, and the process lives on', async () => {
    const logs = new LogCapture();
    const pool = createPool(TEST_DATABASE_URL, logs.logger, 2);
    try {
      const client = await pool.connect();
      const [{pid}] = (await client.query('SELECT pg_backend_pid() AS pid'))
        .rows as Array<{pid: number}>;
      await sql('SELECT pg_terminate_backend($1)', [pid]);
      await eventually(
        () => logs.find('Database connection lost').length > 0 || undefined,
        10_000,
        'the lost connection to be logged',
      );
      await expect(client.query('SELECT 1')).to.be.rejected();
      client.release();
      // The pool hands out a working connection afterwards.
      const {rows} = await pool.query('SELECT 1 AS one');
      expect(rows).to.deepEqual([{one: 1}]);
    } finally {
      await pool.end();
    }
  });

  it("runs the producer's sessions without JIT and with its statement limit: a minute's claim is never compiled first", async () => {
    const logs = new LogCapture();
    const pool = createProducerPool(
      {
        databaseUrl: TEST_DATABASE_URL,
        databasePoolMode: 'session',
        dbStatementTimeoutMs: 12_345,
      },
      logs.logger,
    );
    try {
      const {rows} = await pool.query(
        `SELECT current_setting('jit') AS jit,
                current_setting('statement_timeout') AS statement_timeout`,
      );
      expect(rows).to.deepEqual([{jit: 'off', statement_timeout: '12345ms'}]);
    } finally {
      await pool.end();
    }
  });
});
