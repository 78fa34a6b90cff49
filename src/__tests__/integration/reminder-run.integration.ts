import {expect} from '@loopback/testlab';
import {TcpProxy, viaPort} from '../fixtures/tcp-proxy';
import {resetBroker} from '../fixtures/test-broker';
import {
  eventually,
  givenConsumer,
  givenWorkersDir,
  publishTask,
  TEST_RETRY,
  TestConsumer,
} from '../fixtures/test-consumer';
import {
  givenCatalog,
  sql,
  TEST_DATABASE_URL,
  truncateAll,
} from '../fixtures/test-database';

/**
 * Issue 17: a reminder task is one statement that starts its run, writes
 * its notifications and marks success. What the consumer makes of that, on
 * the real PostgreSQL and RabbitMQ: the run is recorded in one transaction,
 * duplicates start nothing, and every failure path counts one attempt per
 * delivery and loses nothing.
 */
describe('reminder runs through the consumer', () => {
  let consumer: TestConsumer | undefined;
  let proxy: TcpProxy | undefined;
  const workersDir = givenWorkersDir({});

  before(async () => {
    // Every status change of a run, with the transaction that made it.
    await sql(`CREATE TABLE IF NOT EXISTS test_run_transition (
                 execution_id bigint, old_status text, new_status text, txid bigint)`);
    await sql(`CREATE OR REPLACE FUNCTION test_record_run_transition() RETURNS trigger
               LANGUAGE plpgsql AS $$
               BEGIN
                 INSERT INTO test_run_transition
                 VALUES (NEW.id, OLD.status, NEW.status, txid_current());
                 RETURN NULL;
               END $$`);
    await sql(`CREATE TRIGGER test_run_transition AFTER UPDATE OF status
               ON scheduler_execution FOR EACH ROW
               EXECUTE FUNCTION test_record_run_transition()`);
  });
  after(async () => {
    await sql(
      `DROP TRIGGER IF EXISTS test_run_transition ON scheduler_execution`,
    );
    await sql(`DROP FUNCTION IF EXISTS test_record_run_transition()`);
    await sql(`DROP TABLE IF EXISTS test_run_transition`);
  });
  beforeEach(async () => {
    await truncateAll();
    await givenCatalog();
    await resetBroker();
    await sql(`TRUNCATE test_run_transition`);
  });
  afterEach(async () => {
    await consumer?.stop(100);
    consumer = undefined;
    await proxy?.close();
    proxy = undefined;
  });

  async function givenRecipients(): Promise<void> {
    const users = await sql<{id: number}>(
      `INSERT INTO app_user (email, name, password_hash, role) VALUES
         ('a@x.io', 'A', 'h', 'viewer'), ('b@x.io', 'B', 'h', 'viewer')
       RETURNING id`,
    );
    await sql(`UPDATE reminder SET user_ids = $1 WHERE id = 1`, [
      JSON.stringify(users.map(u => u.id)),
    ]);
  }

  async function publishReminder(
    reminderId: number,
    params: object = {},
    status = 'published',
  ) {
    const [scheduler] = await sql<{id: number}>(
      `INSERT INTO scheduler (description, schedule, reminder_id)
       VALUES ('r', '* * * * *', 1) RETURNING id`,
    );
    const [run] = await sql<{id: string}>(
      `INSERT INTO scheduler_execution (scheduler_id, execution_key, container_id, status, published_at)
       VALUES ($1, 'cron-2026-11-25-10-00', 'test', $2, now()) RETURNING id`,
      [scheduler.id, status],
    );
    const executionId = Number(run.id);
    await publishTask(
      {
        type: 'reminder',
        id: reminderId,
        scheduler_id: scheduler.id,
        params_scheduler: JSON.stringify(params),
      },
      {
        'x-execution-id': executionId,
        'x-execution-key': 'cron-2026-11-25-10-00',
      },
    );
    return executionId;
  }

  const runRow = async (id: number) =>
    (
      await sql<{status: string; attempts: number; last_error: string}>(
        `SELECT status, attempts, last_error FROM scheduler_execution WHERE id = $1`,
        [id],
      )
    )[0];

  const transitions = async (id: number) =>
    sql<{old_status: string; new_status: string; txid: string}>(
      `SELECT old_status, new_status, txid FROM test_run_transition
        WHERE execution_id = $1 ORDER BY txid`,
      [id],
    );

  const notifications = async () =>
    (await sql(`SELECT id FROM notification`)).length;

  it('records the run from published to succeeded in one transaction, logging start, sending and success in order', async () => {
    await givenRecipients();
    consumer = await givenConsumer({workersDir});
    const executionId = await publishReminder(1);
    await eventually(
      async () => (await runRow(executionId)).status === 'succeeded',
    );
    expect(await transitions(executionId)).to.have.length(1);
    expect((await transitions(executionId))[0]).to.containDeep({
      old_status: 'published',
      new_status: 'succeeded',
    });
    expect((await runRow(executionId)).attempts).to.equal(1);
    expect(await notifications()).to.equal(2);
    const lines = consumer.logs.records
      .map(r => r.msg)
      .filter(msg =>
        ['Task started', 'Reminder sent', 'Task succeeded'].includes(
          msg as string,
        ),
      );
    expect(lines).to.eql(['Task started', 'Reminder sent', 'Task succeeded']);
  });

  it('acknowledges a delivery of a run that already succeeded, without a start or a notification', async () => {
    await givenRecipients();
    consumer = await givenConsumer({workersDir});
    const executionId = await publishReminder(1, {}, 'succeeded');
    await eventually(
      () =>
        consumer!.logs.find(
          'Task already succeeded; redelivery acknowledged without running',
        ).length === 1 || undefined,
    );
    expect(consumer.logs.find('Task started')).to.have.length(0);
    expect(await notifications()).to.equal(0);
    expect(await transitions(executionId)).to.have.length(0);
  });

  it('counts one attempt per delivery of a reminder that does not exist, then parks it', async () => {
    consumer = await givenConsumer({workersDir});
    const executionId = await publishReminder(999);
    await eventually(
      async () => (await runRow(executionId)).status === 'failed',
    );
    expect(await runRow(executionId)).to.containDeep({
      attempts: TEST_RETRY.maxRetries + 1,
      last_error: 'reminder 999 does not exist',
    });
    expect(consumer.logs.find('Task started')).to.have.length(
      TEST_RETRY.maxRetries + 1,
    );
  });

  it('marks the start and schedules a retry when the statement itself fails', async () => {
    await givenRecipients();
    consumer = await givenConsumer({workersDir});
    // PostgreSQL refuses text with a NUL character: nothing of the statement commits.
    const executionId = await publishReminder(1, {message: 'x\u0000y'});
    await eventually(
      () =>
        consumer!.logs.records.some(r =>
          r.msg.startsWith('Scheduling retry 1/'),
        ) || undefined,
    );
    expect(await runRow(executionId)).to.containDeep({
      status: 'retrying',
      attempts: 1,
    });
    expect((await runRow(executionId)).last_error).to.match(/0x00|u0000/);
    expect(await notifications()).to.equal(0);
  });

  it('requeues a reminder while PostgreSQL is unreachable and runs it once when it is back', async () => {
    await givenRecipients();
    const target = new URL(TEST_DATABASE_URL);
    proxy = new TcpProxy(target.hostname, Number(target.port || 5432));
    const port = await proxy.start();
    consumer = await givenConsumer({
      workersDir,
      databaseUrl: viaPort(TEST_DATABASE_URL, port),
      tuning: {requeueDelayMs: 100},
    });
    proxy.cut();
    const executionId = await publishReminder(1);
    await eventually(
      () =>
        consumer!.logs.find('Task handling failed; message requeued').length >
          0 || undefined,
    );
    expect(await runRow(executionId)).to.containDeep({
      status: 'published',
      attempts: 0,
    });
    proxy.restore();
    await eventually(
      async () => (await runRow(executionId)).status === 'succeeded',
    );
    expect((await runRow(executionId)).attempts).to.equal(1);
    expect(await notifications()).to.equal(2);
  });
});
