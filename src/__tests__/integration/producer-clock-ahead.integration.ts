import {expect} from '@loopback/testlab';
import {
  CLOCK_AHEAD_TOLERANCE_MS,
  MAX_CLOCK_WAIT_MS,
} from '../../producer/producer';
import {TASK_QUEUE} from '../../queue/topology';
import {drainQueue, resetBroker} from '../fixtures/test-broker';
import {givenCatalog, sql, truncateAll} from '../fixtures/test-database';
import {
  at,
  bodies,
  givenProducer,
  insertSchedulers,
  TestProducer,
} from '../fixtures/test-producer';

const SLOT = at('2026-11-21T10:00:00Z');
const TICK = new Date(SLOT.getTime() + 10);

/**
 * A database clock `behindMs` behind the tick's time at the tick, moving
 * on in real time as a clock does.
 */
function databaseBehind(behindMs: number) {
  const started = Date.now();
  return async () =>
    new Date(TICK.getTime() - behindMs + (Date.now() - started));
}

/**
 * Review findings: a producer whose host clock ran 100 s ahead evaluated
 * each minute 100 s before it began and took its lease, so its peers skipped
 * it and schedulers created in between missed their first run, silently.
 * A first fix left such minutes to the next tick: with CRON_CATCHUP_MINUTES=0
 * they then fell out of the window (lost), otherwise they fired 55 s late.
 * A tick now waits for the database's clock when it is a little behind, and
 * only leaves the minutes to later ticks when it is far behind.
 */
describe('producer: a host clock ahead of the database', () => {
  let p: TestProducer | undefined;

  beforeEach(async () => {
    await truncateAll();
    await givenCatalog();
    await sql('TRUNCATE producer_state');
    await resetBroker();
  });
  afterEach(async () => {
    await p?.stop();
    p = undefined;
  });

  const published = async () =>
    bodies(await drainQueue(TASK_QUEUE)).map(m => m.scheduler_id);

  it('waits for the database when the host is a few seconds ahead, and fires the minute then (review: lost with no catch-up)', async () => {
    const [id] = await insertSchedulers([{schedule: '* * * * *'}]);
    p = await givenProducer({
      cronCatchUpMinutes: 0,
      databaseClock: databaseBehind(CLOCK_AHEAD_TOLERANCE_MS + 1000),
    });
    const started = Date.now();
    const report = await p.producer.tick(TICK);
    // It waited about the second beyond the tolerance, not for a minute.
    expect(Date.now() - started).to.be.within(900, 20_000);
    expect(report).to.containDeep({slots: 1, claimed: 1, published: 1});
    expect(await published()).to.deepEqual([id]);
    const [waited] = p.logs.find(
      "This host's clock is ahead of the database's: the tick waits for it",
    );
    expect(waited.level).to.equal('warn');
  });

  it('evaluates at once when the host is ahead within the tolerance', async () => {
    await insertSchedulers([{schedule: '* * * * *'}]);
    p = await givenProducer({
      cronCatchUpMinutes: 0,
      databaseClock: databaseBehind(CLOCK_AHEAD_TOLERANCE_MS / 2),
    });
    const started = Date.now();
    expect(await p.producer.tick(TICK)).to.containDeep({slots: 1, claimed: 1});
    expect(Date.now() - started).to.be.below(CLOCK_AHEAD_TOLERANCE_MS);
  });

  it('leaves a minute the database is far from to a later tick, takes no lease for it, and says so', async () => {
    const [id] = await insertSchedulers([{schedule: '* * * * *'}]);
    let databaseNow = new Date(TICK.getTime() - MAX_CLOCK_WAIT_MS - 60_000);
    p = await givenProducer({
      cronCatchUpMinutes: 5,
      databaseClock: async () => databaseNow,
    });
    const early = await p.producer.tick(TICK);
    // The five minutes before it had begun there: evaluated; the tick's own not.
    expect(early.slots).to.equal(4);
    const leased = await sql<{slot: Date}>(
      `SELECT slot FROM producer_slot_lease ORDER BY slot`,
    );
    expect(leased.map(row => row.slot.getTime())).to.not.containEql(
      SLOT.getTime(),
    );
    const [said] = p.logs.find(
      "This host's clock is ahead of the database's: minutes that have not begun there are not evaluated yet",
    );
    expect(said.level).to.equal('error');
    expect(said.waiting_slots).to.deepEqual([
      new Date(SLOT.getTime() - 60_000).toISOString(),
      SLOT.toISOString(),
    ]);
    await drainQueue(TASK_QUEUE);

    // The clocks agree again: the next tick evaluates what was left.
    const next = new Date(TICK.getTime() + 60_000);
    databaseNow = next;
    const later = await p.producer.tick(next);
    expect(later.slots).to.equal(3);
    expect(await published()).to.deepEqual([id, id, id]);
  });
});
