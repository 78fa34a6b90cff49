import {expect} from '@loopback/testlab';
import {CLOCK_AHEAD_TOLERANCE_MS} from '../../producer/producer';
import {TASK_QUEUE} from '../../queue/topology';
import {drainQueue, resetBroker} from '../fixtures/test-broker';
import {givenCatalog, sql, truncateAll} from '../fixtures/test-database';
import {
  bodies,
  givenProducer,
  insertSchedulers,
  TestProducer,
} from '../fixtures/test-producer';

const MINUTE_MS = 60_000;

/**
 * Review finding: a producer whose host clock ran 100 s ahead evaluated each
 * minute 100 s before it began and took its lease, so its peers skipped it
 * ("slots_by_peers") and schedulers created in between missed their first
 * run, silently. On real time a producer now evaluates a minute only once
 * the database's clock has reached it.
 */
describe('producer: a host clock ahead of the database', () => {
  let p: TestProducer;

  beforeEach(async () => {
    await truncateAll();
    await givenCatalog();
    await sql('TRUNCATE producer_state');
    await resetBroker();
    p = await givenProducer({
      cronCatchUpMinutes: 0,
      slotsByDatabaseClock: true,
    });
  });
  afterEach(() => p.stop());

  const databaseNow = async () =>
    (await sql<{now: Date}>('SELECT clock_timestamp() AS now'))[0].now;

  it('leaves a minute the database has not reached to a later tick, takes no lease for it, and says so', async () => {
    const [id] = await insertSchedulers([{schedule: '* * * * *'}]);
    const current = Math.floor((await databaseNow()).getTime() / MINUTE_MS);
    // This host thinks it is two minutes later than the database does.
    const ahead = new Date((current + 2) * MINUTE_MS + 10);
    const early = await p.producer.tick(ahead);
    expect(early).to.containDeep({slots: 0, due: 0, claimed: 0});
    expect(await sql(`SELECT slot FROM producer_slot_lease`)).to.deepEqual([]);
    expect(await sql(`SELECT id FROM scheduler_execution`)).to.deepEqual([]);
    const [said] = p.logs.find(
      "This host's clock is ahead of the database's: minutes that have not begun there are not evaluated yet",
    );
    expect(said.level).to.equal('error');
    expect(said.ahead_ms as number).to.be.greaterThan(MINUTE_MS);
    expect(said.waiting_slots).to.deepEqual([
      new Date((current + 2) * MINUTE_MS).toISOString(),
    ]);

    // The database's current minute is evaluated as usual, by the same producer.
    const onTime = await p.producer.tick(new Date(current * MINUTE_MS + 10));
    expect(onTime).to.containDeep({slots: 1, claimed: 1, published: 1});
    expect(
      bodies(await drainQueue(TASK_QUEUE)).map(m => m.scheduler_id),
    ).to.deepEqual([id]);
  });

  it('evaluates the minute the database has reached when the host is ahead within the tolerance', async () => {
    await insertSchedulers([{schedule: '* * * * *'}]);
    const now = (await databaseNow()).getTime();
    const current = Math.floor(now / MINUTE_MS);
    // Ahead by less than the tolerance, the current minute is still begun.
    const report = await p.producer.tick(
      new Date(current * MINUTE_MS + 10 + CLOCK_AHEAD_TOLERANCE_MS / 2),
    );
    expect(report).to.containDeep({slots: 1, claimed: 1});
  });
});
