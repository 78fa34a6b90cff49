import {expect} from '@loopback/testlab';
import type {Pool} from 'pg';
import {Webhook as StandardWebhook} from 'standardwebhooks';
import {createPool} from '../../database/pg-pool';
import {deleteOldWebhookDeliveries} from '../../producer/cleanup';
import {
  NOTHING_ALLOWED,
  OutboundAllow,
  parseOutboundAllow,
} from '../../outbound/address-policy';
import {newSigningSecret} from '../../outbound/webhook-signature';
import {AmqpConnection} from '../../queue/amqp-connection';
import {
  assertTopology,
  brokerTopology,
  RetrySettings,
} from '../../queue/topology';
import {
  OWNER_IN_FLIGHT_MAX,
  WebhookConsumer,
} from '../../webhooks/webhook-consumer';
import {WebhookDispatcher} from '../../webhooks/webhook-dispatcher';
import {LogCapture} from '../fixtures/log-capture';
import {resetBroker, TEST_AMQP_URL, TEST_RETRY} from '../fixtures/test-broker';
import {eventually} from '../fixtures/test-consumer';
import {
  sql,
  TEST_DATABASE_URL,
  truncateAll,
  withClient,
} from '../fixtures/test-database';
import {ReceivedCall, TestReceiver} from '../fixtures/test-receiver';

interface Delivery {
  id: number;
  event: string;
  status: string;
  attempts: number;
  status_code: number | null;
  error: string | null;
  message_id: string;
}

/** The webhook consumer and its dispatcher on this run's database and vhost. */
async function givenWebhookRole(options: {
  retry?: RetrySettings;
  outboundAllow?: OutboundAllow;
}) {
  const logs = new LogCapture();
  const retry = options.retry ?? TEST_RETRY;
  const pool: Pool = createPool(TEST_DATABASE_URL, logs.logger);
  const connection = new AmqpConnection(TEST_AMQP_URL, logs.logger, {
    onConnect: c =>
      assertTopology(() => c.createChannel(), brokerTopology(retry)),
    minBackoffMs: 50,
    maxBackoffMs: 200,
  });
  const consumer = new WebhookConsumer({
    connection,
    pool,
    retry,
    outboundAllow: options.outboundAllow ?? parseOutboundAllow('127.0.0.2'),
    logger: logs.logger,
    timeoutMs: 2000,
  });
  // Passes run on the test's word, never on a timer: no timed tests.
  const dispatcher = new WebhookDispatcher(pool, connection, logs.logger);
  await connection.start();
  await consumer.start();
  return {
    logs,
    dispatcher,
    async stop() {
      await dispatcher.stop();
      await consumer.stop();
      await connection.stop();
      await pool.end();
    },
  };
}

/** The rule, written out: the test must not follow the constant. */
const MAX_CONSECUTIVE_FAILURES = 20;

describe('Webhook deliveries (issue 27, item 3)', () => {
  let receiver: TestReceiver;
  let refused: TestReceiver;
  let role: Awaited<ReturnType<typeof givenWebhookRole>> | undefined;

  before(async () => {
    receiver = await TestReceiver.listen('127.0.0.2');
    refused = await TestReceiver.listen('127.0.0.1');
  });
  after(async () => {
    await receiver.close();
    await refused.close();
  });
  beforeEach(async () => {
    receiver.calls.length = 0;
    refused.calls.length = 0;
    receiver.answer = (_call, response) => response.end('ok');
    await truncateAll();
    await resetBroker();
  });
  afterEach(async () => {
    await role?.stop();
    role = undefined;
  });

  async function givenUser(kind: 'admin' | 'operator'): Promise<number> {
    const [user] = await sql<{id: number}>(
      `INSERT INTO app_user (email, name, password_hash, role)
       VALUES ($1, 'u', 'x', $2) RETURNING id`,
      [`${kind}-${Math.random()}@example.com`, kind],
    );
    return user.id;
  }

  async function givenWebhook(options: {
    userId: number;
    url?: string;
    events?: string[];
    previousSecret?: string;
  }): Promise<{id: number; secret: string}> {
    const secret = newSigningSecret();
    const [row] = await sql<{id: number}>(
      `INSERT INTO webhook (user_id, url, events, signing_secret,
                            previous_signing_secret, previous_secret_expires_at)
       VALUES ($1, $2, $3, $4, $5, now() + interval '1 hour') RETURNING id`,
      [
        options.userId,
        options.url ?? receiver.url(),
        JSON.stringify(options.events ?? ['run.succeeded', 'run.failed']),
        secret,
        options.previousSecret ?? null,
      ],
    );
    return {id: row.id, secret};
  }

  async function givenScheduler(userId: number | null): Promise<number> {
    const [row] = await sql<{id: number}>(
      `INSERT INTO reminder (message) VALUES ('r') RETURNING id`,
    ).then(async ([reminder]) =>
      sql<{id: number}>(
        `INSERT INTO scheduler (description, schedule, reminder_id, user_id)
         VALUES ('nightly', '0 2 * * *', $1, $2) RETURNING id`,
        [reminder.id, userId],
      ),
    );
    return row.id;
  }

  /** A run of the scheduler that ends with `status`, as the consumer's ledger marks it. */
  async function givenRunEnded(
    schedulerId: number,
    status: 'succeeded' | 'failed',
    key = `cron-${Math.random()}`,
  ): Promise<void> {
    const [run] = await sql<{id: string}>(
      `INSERT INTO scheduler_execution (scheduler_id, execution_key, container_id, status)
       VALUES ($1, $2, 'test', 'running') RETURNING id`,
      [schedulerId, key],
    );
    await sql(
      `UPDATE scheduler_execution SET status = $2, finished_at = now() WHERE id = $1`,
      [run.id, status],
    );
  }

  const deliveries = (webhookId: number) =>
    sql<Delivery>(
      `SELECT id::int AS id, event, status, attempts, status_code, error, message_id
         FROM webhook_delivery WHERE webhook_id = $1 ORDER BY id`,
      [webhookId],
    );

  const settled = (webhookId: number, count = 1) =>
    eventually(
      async () => {
        const rows = await deliveries(webhookId);
        return rows.length >= count &&
          rows.every(row =>
            ['succeeded', 'failed', 'cancelled'].includes(row.status),
          )
          ? rows
          : undefined;
      },
      15_000,
      'the deliveries to settle',
    );

  const verify = (secret: string, call: ReceivedCall) =>
    new StandardWebhook(secret).verify(
      call.body,
      call.headers as Record<string, string>,
    );

  it('delivers a run event signed so the reference standardwebhooks package verifies it', async () => {
    const admin = await givenUser('admin');
    const hook = await givenWebhook({userId: admin});
    const schedulerId = await givenScheduler(null);
    await givenRunEnded(schedulerId, 'succeeded');
    role = await givenWebhookRole({});
    expect(await role.dispatcher.dispatch()).to.equal(1);
    const [delivery] = await settled(hook.id);
    expect(delivery).to.containDeep({
      event: 'run.succeeded',
      status: 'succeeded',
      attempts: 1,
      status_code: 200,
    });
    expect(receiver.calls).to.have.length(1);
    const body = verify(hook.secret, receiver.calls[0]) as {
      type: string;
      data: {scheduler_id: number; status: string};
    };
    expect(body.type).to.equal('run.succeeded');
    expect(body.data).to.containDeep({
      scheduler_id: schedulerId,
      status: 'succeeded',
    });
    expect(receiver.calls[0].headers['webhook-id']).to.equal(
      delivery.message_id,
    );
    expect(role.logs.lines.join('\n')).to.not.containEql(hook.secret);
  });

  it('sends every attempt of one delivery with the same webhook-id, each signature valid', async () => {
    const admin = await givenUser('admin');
    const hook = await givenWebhook({userId: admin});
    let answered = 0;
    receiver.answer = (_call, response) => {
      answered++;
      response.statusCode = answered <= 2 ? 503 : 204;
      response.end();
    };
    await givenRunEnded(await givenScheduler(null), 'failed');
    role = await givenWebhookRole({});
    await role.dispatcher.dispatch();
    const [delivery] = await settled(hook.id);
    expect(delivery).to.containDeep({
      event: 'run.failed',
      status: 'succeeded',
      attempts: 3,
      status_code: 204,
    });
    expect(receiver.calls).to.have.length(3);
    const ids = new Set(receiver.calls.map(call => call.headers['webhook-id']));
    expect([...ids]).to.eql([delivery.message_id]);
    for (const call of receiver.calls) verify(hook.secret, call);
  });

  it('signs with both secrets during a rotation window', async () => {
    const admin = await givenUser('admin');
    const previous = newSigningSecret();
    const hook = await givenWebhook({userId: admin, previousSecret: previous});
    await givenRunEnded(await givenScheduler(null), 'succeeded');
    role = await givenWebhookRole({});
    await role.dispatcher.dispatch();
    await settled(hook.id);
    const [call] = receiver.calls;
    expect(String(call.headers['webhook-signature']).split(' ')).to.have.length(
      2,
    );
    verify(hook.secret, call);
    verify(previous, call);
  });

  it('disables the endpoint at once on a 410, with a notice to its owner', async () => {
    const operator = await givenUser('operator');
    const hook = await givenWebhook({userId: operator});
    receiver.answer = (_call, response) => {
      response.statusCode = 410;
      response.end();
    };
    const schedulerId = await givenScheduler(operator);
    await givenRunEnded(schedulerId, 'succeeded');
    role = await givenWebhookRole({});
    await role.dispatcher.dispatch();
    const [delivery] = await settled(hook.id);
    expect(delivery).to.containDeep({
      status: 'failed',
      attempts: 1,
      status_code: 410,
    });
    const [webhook] = await sql(
      `SELECT active, disabled_reason FROM webhook WHERE id = $1`,
      [hook.id],
    );
    expect(webhook.active).to.be.false();
    expect(webhook.disabled_reason).to.match(/410/);
    const notices = await sql(`SELECT user_id, payload FROM notification`);
    expect(notices).to.containDeep([
      {
        user_id: operator,
        payload: {kind: 'webhook_disabled', webhook_id: hook.id},
      },
    ]);
    expect(notices).to.have.length(1);
    // A disabled endpoint is told of nothing more.
    await givenRunEnded(schedulerId, 'succeeded');
    expect(await deliveries(hook.id)).to.have.length(1);
  });

  /**
   * Fails the first UPDATE of a webhook row that `when` matches, as a
   * process killed or a connection lost between two writes would: a
   * trigger counting on a sequence, which no rollback undoes. Gives the
   * function that removes it.
   */
  async function failingOnce(when: string): Promise<() => Promise<void>> {
    const drop = `DROP TRIGGER IF EXISTS test_fails_once ON webhook;
      DROP FUNCTION IF EXISTS test_fails_once();
      DROP SEQUENCE IF EXISTS test_fails_once;`;
    await sql(`${drop}
      CREATE SEQUENCE test_fails_once;
      CREATE FUNCTION test_fails_once() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF nextval('test_fails_once') = 1 THEN
          RAISE EXCEPTION 'injected: the write after the delivery''s outcome failed';
        END IF;
        RETURN NEW;
      END $$;
      CREATE TRIGGER test_fails_once BEFORE UPDATE ON webhook
        FOR EACH ROW WHEN (${when}) EXECUTE FUNCTION test_fails_once();`);
    return async () => {
      await sql(drop);
    };
  }

  const activeOf = async (webhookId: number) =>
    (await sql(`SELECT active FROM webhook WHERE id = $1`, [webhookId]))[0]
      .active as boolean;

  /** Dispatches with `failingOnce(failWhen)` in place, until the endpoint is disabled. */
  async function dispatchUntilDisabled(
    webhookId: number,
    failWhen: string,
  ): Promise<void> {
    const undo = await failingOnce(failWhen);
    try {
      await role!.dispatcher.dispatch();
      await eventually(
        async () => (await activeOf(webhookId)) === false || undefined,
        15_000,
        'the endpoint to be disabled',
      );
    } finally {
      await undo();
    }
  }

  it('disables the endpoint on a 410 though the first try to record it failed midway (review: the delivery stayed failed, the endpoint active for good)', async () => {
    const operator = await givenUser('operator');
    const hook = await givenWebhook({userId: operator});
    receiver.answer = (_call, response) => {
      response.statusCode = 410;
      response.end();
    };
    await givenRunEnded(await givenScheduler(operator), 'succeeded');
    role = await givenWebhookRole({});
    await dispatchUntilDisabled(hook.id, 'OLD.active AND NOT NEW.active');
    const [delivery] = await settled(hook.id);
    expect(delivery).to.containDeep({
      status: 'failed',
      attempts: 1,
      status_code: 410,
    });
    expect(await sql(`SELECT user_id FROM notification`)).to.deepEqual([
      {user_id: operator},
    ]);
    // Sent again: the first answer's outcome was never recorded.
    expect(receiver.calls).to.have.length(2);
  });

  // What DELETE /api/webhooks/{id} and DELETE /api/users/{id} run, each
  // cascading to the endpoint's deliveries.
  const deletes = [
    {of: 'the endpoint', table: 'webhook', id: 'hook'},
    {of: "the endpoint's owner", table: 'app_user', id: 'owner'},
  ] as const;
  for (const deleted of deletes) {
    it(`lets ${deleted.of} be deleted while a delivery disables the endpoint, without a deadlock (review: DELETE or the consumer failed with 40P01)`, async () => {
      const admin = await givenUser('admin');
      const hook = await givenWebhook({userId: admin});
      receiver.answer = (_call, response) => {
        response.statusCode = 410;
        response.end();
      };
      await givenRunEnded(await givenScheduler(null), 'succeeded');
      // Holds the outcome's transaction between its writes for half a
      // second, as a busy worker process may, so that the DELETE comes then.
      await sql(`CREATE FUNCTION test_pause() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN PERFORM pg_sleep(0.5); RETURN NEW; END $$;
      CREATE TRIGGER test_pause AFTER UPDATE ON webhook_delivery FOR EACH ROW
        WHEN (NEW.status = 'failed') EXECUTE FUNCTION test_pause();`);
      try {
        role = await givenWebhookRole({});
        await role.dispatcher.dispatch();
        await eventually(
          async () =>
            (
              await sql(
                `SELECT 1 FROM pg_stat_activity
                WHERE wait_event = 'PgSleep' AND datname = current_database()`,
              )
            ).length > 0 || undefined,
          10_000,
          'the outcome to be held between its writes',
        );
        await withClient(TEST_DATABASE_URL, client =>
          client.query(`DELETE FROM ${deleted.table} WHERE id = $1`, [
            deleted.id === 'hook' ? hook.id : admin,
          ]),
        );
      } finally {
        await sql(`DROP TRIGGER test_pause ON webhook_delivery;
        DROP FUNCTION test_pause();`);
      }
      expect(await sql(`SELECT id FROM webhook_delivery`)).to.deepEqual([]);
      expect(
        role.logs.find('Webhook delivery not handled; requeued'),
      ).to.deepEqual([]);
      expect(receiver.calls).to.have.length(1);
    });
  }

  it('counts a last failure towards disabling though the first try to record it failed midway', async () => {
    const admin = await givenUser('admin');
    const hook = await givenWebhook({userId: admin});
    await sql(`UPDATE webhook SET consecutive_failures = $2 WHERE id = $1`, [
      hook.id,
      MAX_CONSECUTIVE_FAILURES - 1,
    ]);
    receiver.answer = (_call, response) => {
      response.statusCode = 500;
      response.end();
    };
    await givenRunEnded(await givenScheduler(null), 'failed');
    role = await givenWebhookRole({retry: {...TEST_RETRY, maxRetries: 0}});
    await dispatchUntilDisabled(
      hook.id,
      'NEW.consecutive_failures > OLD.consecutive_failures',
    );
    const [delivery] = await settled(hook.id);
    expect(delivery).to.containDeep({
      status: 'failed',
      attempts: 1,
      status_code: 500,
    });
    const [webhook] = await sql(
      `SELECT consecutive_failures, disabled_reason FROM webhook WHERE id = $1`,
      [hook.id],
    );
    expect(webhook).to.containDeep({
      consecutive_failures: MAX_CONSECUTIVE_FAILURES,
    });
    expect(webhook.disabled_reason).to.match(/in a row/);
  });

  it(`disables the endpoint after ${MAX_CONSECUTIVE_FAILURES} failed deliveries in a row, not before`, async () => {
    const admin = await givenUser('admin');
    const hook = await givenWebhook({userId: admin});
    receiver.answer = (_call, response) => {
      response.statusCode = 500;
      response.end();
    };
    const schedulerId = await givenScheduler(null);
    role = await givenWebhookRole({retry: {...TEST_RETRY, maxRetries: 0}});
    const active = async () =>
      (await sql(`SELECT active FROM webhook WHERE id = $1`, [hook.id]))[0]
        .active;
    for (let n = 1; n < MAX_CONSECUTIVE_FAILURES; n++) {
      await givenRunEnded(schedulerId, 'failed');
    }
    await role.dispatcher.dispatch();
    await settled(hook.id, MAX_CONSECUTIVE_FAILURES - 1);
    expect(await active()).to.be.true();
    await givenRunEnded(schedulerId, 'failed');
    await role.dispatcher.dispatch();
    await settled(hook.id, MAX_CONSECUTIVE_FAILURES);
    await eventually(
      async () => (await active()) === false || undefined,
      5000,
      'the endpoint to be disabled',
    );
    const notices = await sql(`SELECT payload FROM notification`);
    expect(notices).to.have.length(1);
    expect(notices[0].payload).to.containDeep({
      kind: 'webhook_disabled',
      webhook_id: hook.id,
    });
  });

  it('records a refused address in the delivery log when OUTBOUND_ALLOW does not open it', async () => {
    const admin = await givenUser('admin');
    const hook = await givenWebhook({userId: admin, url: refused.url()});
    await givenRunEnded(await givenScheduler(null), 'succeeded');
    role = await givenWebhookRole({
      retry: {...TEST_RETRY, maxRetries: 1},
      outboundAllow: NOTHING_ALLOWED,
    });
    await role.dispatcher.dispatch();
    const [delivery] = await settled(hook.id);
    expect(delivery).to.containDeep({
      status: 'failed',
      attempts: 2,
      status_code: null,
    });
    expect(delivery.error).to.match(
      /SSRF guard: 127\.0\.0\.1 is a loopback address/,
    );
    expect(refused.calls).to.have.length(0);
  });

  it("tells an operator's webhook only of schedulers that operator owns", async () => {
    const operator = await givenUser('operator');
    const other = await givenUser('operator');
    const hook = await givenWebhook({
      userId: operator,
      events: ['run.succeeded', 'scheduler.created'],
    });
    const own = await givenScheduler(operator);
    const foreign = await givenScheduler(other);
    await givenRunEnded(own, 'succeeded');
    await givenRunEnded(foreign, 'succeeded');
    const rows = await sql<{event: string; scheduler_id: number}>(
      `SELECT event, (payload -> 'data' ->> 'scheduler_id')::int AS scheduler_id
         FROM webhook_delivery WHERE webhook_id = $1 ORDER BY id`,
      [hook.id],
    );
    expect(rows).to.eql([
      {event: 'scheduler.created', scheduler_id: own},
      {event: 'run.succeeded', scheduler_id: own},
    ]);
  });

  it('raises notices of issue 26 as notice events, once per notice', async () => {
    const admin = await givenUser('admin');
    const hook = await givenWebhook({
      userId: admin,
      events: ['notice.failure'],
    });
    const owner = await givenUser('operator');
    const schedulerId = await givenScheduler(owner);
    await sql(
      `INSERT INTO notification (user_id, title, payload)
       VALUES ($1, 'failed', $3), ($2, 'failed', $3)`,
      [
        owner,
        admin,
        JSON.stringify({kind: 'failure', scheduler_id: schedulerId}),
      ],
    );
    const rows = await deliveries(hook.id);
    expect(rows.map(row => row.event)).to.eql(['notice.failure']);
  });

  it('forgets finished deliveries past the retention, never pending ones', async () => {
    const admin = await givenUser('admin');
    const hook = await givenWebhook({userId: admin});
    await sql(
      `INSERT INTO webhook_delivery (webhook_id, event, message_id, payload, status, created_at)
       VALUES ($1, 'ping', 'old-done', '{}', 'succeeded', '2026-01-01'),
              ($1, 'ping', 'old-pending', '{}', 'retrying', '2026-01-01'),
              ($1, 'ping', 'recent-done', '{}', 'failed', '2026-03-01')`,
      [hook.id],
    );
    const pool = createPool(TEST_DATABASE_URL, new LogCapture().logger);
    try {
      expect(
        await deleteOldWebhookDeliveries(pool, new Date('2026-02-01')),
      ).to.equal(1);
    } finally {
      await pool.end();
    }
    const left = await sql<{message_id: string}>(
      `SELECT message_id FROM webhook_delivery ORDER BY id`,
    );
    expect(left.map(row => row.message_id)).to.eql([
      'old-pending',
      'recent-done',
    ]);
  });

  /**
   * Dispatches the 13 deliveries, and the admin's (`adminHookId`) is sent
   * before any of the other owner's attempts ended (each takes its 2 s
   * timeout), with no more than that owner's share of them under way.
   */
  async function expectServedWithinShare(
    adminHookId: number,
    hanging: TestReceiver,
  ): Promise<void> {
    role = await givenWebhookRole({});
    expect(await role.dispatcher.dispatch()).to.equal(13);
    const [delivered] = await settled(adminHookId);
    expect(delivered.status).to.equal('succeeded');
    const [{attempted}] = await sql<{attempted: number}>(
      `SELECT count(*)::int AS attempted FROM webhook_delivery
        WHERE webhook_id <> $1 AND attempts > 0`,
      [adminHookId],
    );
    expect(attempted).to.equal(0);
    expect(hanging.calls.length).to.be.belowOrEqual(OWNER_IN_FLIGHT_MAX);
  }

  it("keeps one owner's endpoints that never answer from holding up everyone's deliveries (review: an admin's waited 30 s)", async () => {
    const hanging = await TestReceiver.listen('127.0.0.2');
    hanging.answer = () => undefined;
    try {
      const operator = await givenUser('operator');
      const admin = await givenUser('admin');
      // More than the consumer's prefetch (10), created first: sent first.
      for (let i = 0; i < 12; i++) {
        await givenWebhook({userId: operator, url: hanging.url(`/h${i}`)});
      }
      const adminHook = await givenWebhook({userId: admin});
      await givenRunEnded(await givenScheduler(operator), 'succeeded');
      await expectServedWithinShare(adminHook.id, hanging);
    } finally {
      await hanging.close();
    }
  });

  it("counts test pings in the owner's share too (review: twelve pings held every slot)", async () => {
    const hanging = await TestReceiver.listen('127.0.0.2');
    hanging.answer = () => undefined;
    try {
      const operator = await givenUser('operator');
      const admin = await givenUser('admin');
      const operatorHook = await givenWebhook({
        userId: operator,
        url: hanging.url('/ping'),
      });
      for (let i = 0; i < 12; i++) {
        await sql(
          `INSERT INTO webhook_delivery (webhook_id, event, message_id, payload)
           VALUES ($1, 'ping', 'msg_' || gen_random_uuid(), '{"type":"ping"}')`,
          [operatorHook.id],
        );
      }
      const adminHook = await givenWebhook({userId: admin});
      await givenRunEnded(await givenScheduler(null), 'succeeded');
      await expectServedWithinShare(adminHook.id, hanging);
    } finally {
      await hanging.close();
    }
  });

  it("sends an owner's fourth and fifth deliveries soon after the first three, not a retry delay later (review: 30 s late to fast endpoints)", async () => {
    receiver.answer = (_call, response) =>
      setTimeout(() => response.end('ok'), 300);
    const admin = await givenUser('admin');
    const hooks = [];
    for (let i = 0; i < 5; i++) hooks.push(await givenWebhook({userId: admin}));
    await givenRunEnded(await givenScheduler(null), 'succeeded');
    // A retry delay far longer than the whole test: no delivery may need it.
    role = await givenWebhookRole({
      retry: {...TEST_RETRY, retryDelayMs: 60_000},
    });
    const started = Date.now();
    expect(await role.dispatcher.dispatch()).to.equal(5);
    for (const hook of hooks) {
      const [delivery] = await settled(hook.id);
      expect(delivery).to.containDeep({status: 'succeeded', attempts: 1});
    }
    expect(Date.now() - started).to.be.below(15_000);
  });
});
