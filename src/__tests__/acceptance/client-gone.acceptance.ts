import {expect} from '@loopback/testlab';
import {ProducerBindings} from '../../keys';
import {
  givenRunningApp,
  givenSchedulerBody,
  TestApp,
} from '../fixtures/test-app';
import {asUser, AuthedClient, givenTeam} from '../fixtures/security';
import {givenNeverMatchingCalendars} from '../fixtures/slow-calendars';
import {eventually} from '../fixtures/test-consumer';
import {resetBroker} from '../fixtures/test-broker';
import {givenCatalog, sql, truncateAll} from '../fixtures/test-database';
import type {LogRecord} from '../fixtures/log-capture';

/**
 * A client that closes its connection before the answer: the calendar work
 * only that answer needed stops at its next turn instead of running for
 * nobody (it ran to its end: up to seconds of CPU for each such request).
 */
describe('a client that leaves stops the work its answer needed', () => {
  const NOW = new Date('2026-11-23T12:00:00Z');
  let given: TestApp;
  let operator: AuthedClient;
  let calendarIds: number[];

  before(async () => {
    given = await givenRunningApp({}, app =>
      app.bind(ProducerBindings.CLOCK).to(() => NOW),
    );
    await truncateAll();
    await givenCatalog();
    await resetBroker();
    operator = asUser(given.client, (await givenTeam(given.app)).operator);
    calendarIds = await givenNeverMatchingCalendars(operator);
  });
  after(() => given.app.stop());

  /** A daily scheduler judged by the 100 calendars at every fire. */
  const slowToJudge = async () =>
    (
      await operator
        .post('/api/schedulers')
        .send(
          givenSchedulerBody({
            schedule: '0 3 * * *',
            timezone: 'Europe/Berlin',
            calendar_ids: calendarIds,
          }),
        )
        .expect(201)
    ).body.id as number;

  /** Sends `request`, gives up on it after `ms` (the socket is closed), and says it did. */
  const leaveAfter = async (request: PromiseLike<unknown>, ms: number) => {
    const left = await Promise.resolve(request).then(
      () => false,
      (error: {timeout?: number}) => error.timeout === ms,
    );
    expect(left).to.be.true();
  };

  /** The request log's failure record of `path`, once written. */
  const failureOf = (path: string) =>
    eventually<LogRecord>(
      () => given.logs.find('Request failed', {path})[0],
      20_000,
      `the failure record of ${path}`,
    );

  it('a backfill left while its slots were judged stops, writes nothing and is logged 499', async () => {
    const id = await slowToJudge();
    const days990 = {
      from: new Date(NOW.getTime() - 990 * 86_400_000).toISOString(),
      to: new Date(NOW.getTime() - 60_000).toISOString(),
    };
    const started = performance.now();
    await operator
      .post(`/api/schedulers/${id}/backfill`)
      .send({...days990, dry_run: true})
      .expect(200);
    const wholeMs = performance.now() - started;
    given.logs.clear();

    await leaveAfter(
      operator
        .post(`/api/schedulers/${id}/backfill`)
        .send(days990)
        .timeout(150),
      150,
    );
    const failed = await failureOf(`/api/schedulers/${id}/backfill`);
    expect(failed).to.containDeep({
      level: 'info',
      status_code: 499,
      error_name: 'ClientClosedRequestError',
    });
    expect(failed).to.not.have.property('stack');
    // Stopped at the turn after the client left, not after all 990 slots.
    expect(failed.duration_ms as number).to.be.below(wholeMs / 2);
    expect(await sql(`SELECT id FROM scheduler_execution`)).to.deepEqual([]);
    expect(
      await sql(`SELECT id FROM audit_event WHERE action = 'backfill'`),
    ).to.deepEqual([]);
    await operator.get('/api/ping').expect(200);
  });

  it('a preview left during its look ahead stops it and is logged 499', async () => {
    const body = {
      schedule: '0 3 * * *',
      timezone: 'Europe/Berlin',
      calendar_ids: calendarIds,
      count: 100,
    };
    const started = performance.now();
    const whole = await operator
      .post('/api/schedulers/preview')
      .send(body)
      .expect(200);
    const wholeMs = performance.now() - started;
    // It looked for its whole second of work: nothing ever matches.
    expect(whole.body.runs).to.deepEqual([]);
    expect(whole.body.incomplete).to.match(/stopped after/);
    given.logs.clear();

    await leaveAfter(
      operator.post('/api/schedulers/preview').send(body).timeout(150),
      150,
    );
    const failed = await failureOf('/api/schedulers/preview');
    expect(failed).to.containDeep({level: 'info', status_code: 499});
    expect(failed.duration_ms as number).to.be.below(wholeMs / 2);
  });

  it('a next-runs request left during its look ahead stops it too', async () => {
    const id = await slowToJudge();
    await leaveAfter(
      operator.get(`/api/schedulers/${id}/next-runs?count=100`).timeout(150),
      150,
    );
    const failed = await failureOf(`/api/schedulers/${id}/next-runs`);
    expect(failed).to.containDeep({level: 'info', status_code: 499});
    // The look ahead works for a second when nobody leaves.
    expect(failed.duration_ms as number).to.be.below(900);
  });

  it('a client that stays gets the whole answer (no abort after the response)', async () => {
    const id = await slowToJudge();
    given.logs.clear();
    const res = await operator
      .get(`/api/schedulers/${id}/next-runs?count=1`)
      .expect(200);
    expect(res.body.runs).to.deepEqual([]);
    const [completed] = given.logs.find('Request completed', {
      path: `/api/schedulers/${id}/next-runs`,
    });
    expect(completed).to.containDeep({status_code: 200});
    expect(given.logs.find('Request failed')).to.deepEqual([]);
  });
});
