import {expect} from '@loopback/testlab';
import type {Client} from 'pg';
import {
  TEST_DATABASE_URL,
  truncateAll,
  withClient,
} from '../fixtures/test-database';

/**
 * The webhook outbox triggers fire on every run a consumer marks and every
 * scheduler write. With no active webhook they must stop at their first
 * check, before building an event body or looking up its scheduler's owner:
 * the work they then skip is counted, in the transaction itself, as calls
 * of webhook_event (PostgreSQL's own per-function statistics; no timing).
 */
describe('Webhook outbox triggers with no webhook (issue 27 review)', () => {
  beforeEach(truncateAll);

  /** Runs `work` in one transaction; answers how often webhook_event ran in it. */
  async function eventCalls(
    client: Client,
    work: () => Promise<unknown>,
  ): Promise<number> {
    await client.query('BEGIN');
    try {
      await client.query(`SET LOCAL track_functions = 'pl'`);
      await work();
      const {rows} = await client.query<{calls: string | null}>(
        `SELECT pg_stat_get_xact_function_calls(
                  'webhook_event(text,integer,integer,jsonb)'::regprocedure) AS calls`,
      );
      return Number(rows[0].calls ?? 0);
    } finally {
      await client.query('ROLLBACK');
    }
  }

  /** A run ending, a parked task, a scheduler created, changed and deleted. */
  async function everyEventSource(client: Client): Promise<void> {
    const {rows: reminder} = await client.query<{id: number}>(
      `INSERT INTO reminder (message) VALUES ('r') RETURNING id`,
    );
    const {rows: scheduler} = await client.query<{id: number}>(
      `INSERT INTO scheduler (description, schedule, reminder_id)
       VALUES ('nightly', '0 2 * * *', $1) RETURNING id`,
      [reminder[0].id],
    );
    const schedulerId = scheduler[0].id;
    const {rows: run} = await client.query<{id: string}>(
      `INSERT INTO scheduler_execution (scheduler_id, execution_key, container_id, status)
       VALUES ($1, 'cron-cost', 'test', 'running') RETURNING id`,
      [schedulerId],
    );
    await client.query(
      `UPDATE scheduler_execution SET status = 'failed', finished_at = now() WHERE id = $1`,
      [run[0].id],
    );
    await client.query(
      `INSERT INTO failed_task (scheduler_id, execution_id, payload, failed_reason, failed_at)
       VALUES ($1, $2, '{}', 'boom', now())`,
      [schedulerId, run[0].id],
    );
    await client.query(
      `UPDATE scheduler SET description = 'weekly' WHERE id = $1`,
      [schedulerId],
    );
    await client.query(`DELETE FROM scheduler_execution`);
    await client.query(`DELETE FROM failed_task`);
    await client.query(`DELETE FROM scheduler WHERE id = $1`, [schedulerId]);
  }

  it('does none of the event work when no webhook exists', async () => {
    await withClient(TEST_DATABASE_URL, async client => {
      expect(await eventCalls(client, () => everyEventSource(client))).to.equal(
        0,
      );
    });
  });

  it('does none of it when every webhook is disabled, and all of it for an active one', async () => {
    await withClient(TEST_DATABASE_URL, async client => {
      const {rows: user} = await client.query<{id: number}>(
        `INSERT INTO app_user (email, name, password_hash, role)
         VALUES ('cost@example.com', 'u', 'x', 'admin') RETURNING id`,
      );
      await client.query(
        `INSERT INTO webhook (user_id, url, events, signing_secret, active)
         VALUES ($1, 'https://example.com/hook', '["run.failed"]', 's', false)`,
        [user[0].id],
      );
      expect(await eventCalls(client, () => everyEventSource(client))).to.equal(
        0,
      );
      await client.query(`UPDATE webhook SET active = true`);
      // run.failed, run.parked, scheduler.created/updated/deleted.
      expect(await eventCalls(client, () => everyEventSource(client))).to.equal(
        5,
      );
    });
  });
});
