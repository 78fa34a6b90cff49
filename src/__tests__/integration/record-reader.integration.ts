import {expect} from '@loopback/testlab';
import type {Entity} from '@loopback/repository';
import type {Pool} from 'pg';
import type {TaskSchedulerApplication} from '../../application';
import {RecordReader} from '../../crud/record-reader';
import {EntityRepository, repositoryKey} from '../../crud/repositories';
import {RESOURCES} from '../../resources';
import {givenRunningApp} from '../fixtures/test-app';
import {givenCatalog, sql, truncateAll} from '../fixtures/test-database';

/**
 * Issue 17: findById reads through RecordReader instead of juggler's
 * findOne. The entity it makes must be the one findOne makes, field for
 * field as the API writes it, for every resource and every kind of column:
 * bigint ids, jsonb objects and arrays, timestamps, nulls, hidden columns,
 * text keys.
 */
describe('RecordReader reads what findOne reads', () => {
  let app: TaskSchedulerApplication;

  before(async () => {
    ({app} = await givenRunningApp());
    await truncateAll();
    await givenCatalog();
    await givenVariedRows();
  });
  after(async () => {
    await app.stop();
    await truncateAll();
  });

  async function givenVariedRows(): Promise<void> {
    const [owner] = await sql<{id: number}>(
      `INSERT INTO app_user (email, name, password_hash, role, group_id, active)
       VALUES ('owner@example.com', 'Owner', 'secret-hash', 'operator', NULL, false)
       RETURNING id`,
    );
    await sql(`INSERT INTO user_group (name) VALUES ('ops')`);
    await sql(`INSERT INTO language (code, name) VALUES ('de', 'Deutsch')`);
    const [calendar] = await sql<{id: number}>(
      `INSERT INTO calendar (name, description, time_zone, kind, dates, times)
       VALUES ('Holidays', NULL, 'Europe/London', 'blackout',
               '["2026-12-25","2027-01-01"]', '["* 2-3 * * 0"]') RETURNING id`,
    );
    const [scheduler] = await sql<{id: number}>(
      `INSERT INTO scheduler (description, schedule, timezone, params, status, worker_id,
                              user_id, calendar_ids, starts_at, ends_at, status_reason)
       VALUES ('Nightly "export" ü', '0 6 * * 1-5', 'Europe/Berlin',
               '{"region":"north","nested":{"list":[1,2.5,null,"x"]},"empty":{}}',
               false, 1, $1, $2, '2026-12-01T00:00:00.123Z', NULL, 'paused by ops')
       RETURNING id`,
      [owner.id, JSON.stringify([calendar.id])],
    );
    await sql(
      `INSERT INTO scheduler (description, date_time, reminder_id, params)
       VALUES ('One-time', '2027-03-01T09:30:00Z', 1, '{}')`,
    );
    await sql(
      `SELECT setval(pg_get_serial_sequence('scheduler_execution', 'id'), 9007199254)`,
    );
    const [run] = await sql<{id: string}>(
      `INSERT INTO scheduler_execution (scheduler_id, execution_key, container_id, status,
                                        published_at, started_at, attempts, last_error, payload)
       VALUES ($1, 'cron-2026-11-25-10-00', 'host:1', 'failed', now(), now(), 4,
               'exit code 3', '{"type":"worker","id":1}') RETURNING id`,
      [scheduler.id],
    );
    await sql(
      `INSERT INTO failed_task (execution_id, scheduler_id, type, task_id, params_scheduler,
                                payload, failed_reason, failed_at, retry_count)
       VALUES ($1, $2, 'worker', 1, '{"a":1}', '{"raw":"x"}', 'exit code 3', now(), 3)`,
      [run.id, scheduler.id],
    );
    await sql(
      `INSERT INTO notification (user_id, title, body, payload, read_at)
       VALUES ($1, 'Reminder', NULL, '{"reminder_id":1}', now()),
              ($1, 'Unread', 'body', '{}', NULL)`,
      [owner.id],
    );
    await sql(
      `INSERT INTO ticket (title, description, user_id) VALUES ('Broken', NULL, $1)`,
      [owner.id],
    );
    await sql(
      `INSERT INTO config (key, value) VALUES ('feature.flags', '{"on":[true,false]}')`,
    );
    await sql(
      `INSERT INTO http_target (name, url, headers, secret_headers, secret_header_names, signing_secret)
       VALUES ('hook', 'https://example.com/x', '{"X-A":"1"}', '{"Authorization":"Bearer s"}',
               '["Authorization"]', 'whsec_secret')`,
    );
    await sql(
      `INSERT INTO webhook (user_id, url, events, signing_secret)
       VALUES ($1, 'https://example.com/hook', '["run.parked"]', 'whsec_secret')`,
      [owner.id],
    );
    await sql(
      `INSERT INTO audit_event (actor_user_id, action, entity, entity_id, changes)
       VALUES ($1, 'update', 'scheduler', '1', '{"before":{"status":true},"after":{"status":false}}')`,
      [owner.id],
    );
  }

  for (const resource of RESOURCES) {
    const name = resource.model.modelName;
    it(`reads every ${name} as findOne does`, async () => {
      const repository = await app.get<EntityRepository<Entity>>(
        repositoryKey(name),
      );
      const reader = new RecordReader(repository);
      const idName = resource.model.getIdProperties()[0];
      const all = await repository.find();
      expect(all.length).to.be.above(0);
      for (const record of all) {
        const id = (record as unknown as Record<string, unknown>)[idName];
        const where = {[idName]: id};
        const expected = await repository.findOne({where});
        const actual = await reader.findOne(reader.plainConditions(where)!);
        expect(JSON.stringify(actual)).to.equal(JSON.stringify(expected));
        expect(actual).to.be.instanceOf(resource.model);
      }
      expect(await reader.findOne({[idName]: -1})).to.be.undefined();
    });
  }

  it('reads with an owner scope, and finds nothing outside it', async () => {
    const repository = await app.get<EntityRepository<Entity>>(
      repositoryKey('Ticket'),
    );
    const reader = new RecordReader(repository);
    const [ticket] = await sql<{id: number; user_id: number}>(
      `SELECT id, user_id FROM ticket LIMIT 1`,
    );
    const scoped = reader.plainConditions({
      and: [{id: ticket.id}, {user_id: ticket.user_id}],
    } as object);
    expect(scoped).to.eql({id: ticket.id, user_id: ticket.user_id});
    expect((await reader.findOne(scoped!))?.getId()).to.equal(ticket.id);
    expect(
      await reader.findOne({id: ticket.id, user_id: ticket.user_id + 1}),
    ).to.be.undefined();
  });

  it('leaves anything but property = value to findOne', async () => {
    const repository = await app.get<EntityRepository<Entity>>(
      repositoryKey('Ticket'),
    );
    const reader = new RecordReader(repository);
    for (const where of [
      {id: {gt: 1}},
      {or: [{id: 1}, {id: 2}]},
      {id: null},
      {unknown_column: 1},
      {and: [{id: 1}, {id: 2}]},
    ]) {
      expect(reader.plainConditions(where as object)).to.be.undefined();
    }
  });

  it('prepares each read once per connection where the sessions are ours (named statements)', async () => {
    const repository = await app.get<EntityRepository<Entity>>(
      repositoryKey('Scheduler'),
    );
    const reader = new RecordReader(repository);
    const pool = (repository.dataSource.connector as unknown as {pg: Pool}).pg;
    const sent: Array<{name?: string; text: string}> = [];
    const query = pool.query;
    pool.query = ((config: {name?: string; text: string}, ...rest: []) => {
      sent.push(config);
      return (query as Function).call(pool, config, ...rest);
    }) as typeof pool.query;
    try {
      const [scheduler] = await sql<{id: number; user_id: number | null}>(
        `SELECT id, user_id FROM scheduler WHERE user_id IS NOT NULL LIMIT 1`,
      );
      for (let i = 0; i < 3; i++) {
        expect((await reader.findOne({id: scheduler.id}))?.getId()).to.equal(
          scheduler.id,
        );
      }
      await reader.findOne({id: scheduler.id, user_id: scheduler.user_id!});
    } finally {
      pool.query = query;
    }
    expect(sent).to.have.length(4);
    expect(sent[0].name).to.match(/^record-read-\d+$/);
    expect(new Set(sent.slice(0, 3).map(s => s.name)).size).to.equal(1);
    expect(sent[3].name).to.not.equal(sent[0].name);
    expect(sent[3].text).to.match(/WHERE "?id"? = \$1 AND "?user_id"? = \$2/);
  });
});
