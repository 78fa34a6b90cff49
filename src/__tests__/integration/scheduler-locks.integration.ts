import {expect} from '@loopback/testlab';
import {SchedulerLocks} from '../../stay-alive/scheduler-locks';
import {LogCapture} from '../fixtures/log-capture';
import {TcpProxy, viaPort} from '../fixtures/tcp-proxy';
import {TEST_DATABASE_URL} from '../fixtures/test-database';

/** Issue 14, item 8: the stay-alive lock check sees a lost lock. */
describe('stay-alive scheduler locks', () => {
  const closers: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
  });

  async function givenLocks(databaseUrl = TEST_DATABASE_URL) {
    const logs = new LogCapture();
    let lost = 0;
    const locks = new SchedulerLocks(
      databaseUrl,
      logs.logger,
      () => lost++,
      'locks test',
      {queryTimeoutMs: 500, keepAliveDelayMs: 1000},
    );
    await locks.connect();
    closers.push(() => locks.close());
    return {locks, logs, lostCount: () => lost};
  }

  it('passes while the server holds every lock it took', async () => {
    const {locks, lostCount} = await givenLocks();
    expect(await locks.tryLock(11)).to.be.true();
    expect(await locks.tryLock(12)).to.be.true();
    await locks.verify();
    expect(lostCount()).to.equal(0);
    expect(locks.heldIds().sort()).to.deepEqual([11, 12]);
  });

  it('reports a lock the session no longer holds as lost', async () => {
    const {locks, logs, lostCount} = await givenLocks();
    await locks.tryLock(21);
    // Something released it behind the supervisor's back (same session).
    const client = (locks as unknown as {client: {query(q: string): unknown}})
      .client;
    await client.query('SELECT pg_advisory_unlock_all()');

    await expect(locks.verify()).to.be.rejectedWith(/schedulers 21/);

    expect(lostCount()).to.equal(1);
    expect(locks.heldIds()).to.deepEqual([]);
    expect(logs.find('Stay-alive lock connection lost')).to.have.length(1);
  });

  it('notices a connection that stops answering without closing, within the query timeout', async () => {
    const target = new URL(TEST_DATABASE_URL);
    const proxy = new TcpProxy(target.hostname, Number(target.port || 5432));
    const port = await proxy.start();
    closers.push(() => proxy.close());
    const {locks, lostCount} = await givenLocks(
      viaPort(TEST_DATABASE_URL, port),
    );
    await locks.tryLock(31);
    proxy.stall();

    const started = Date.now();
    await expect(locks.verify()).to.be.rejected();

    expect(Date.now() - started).to.be.below(3000);
    expect(lostCount()).to.equal(1);
    expect(locks.connected).to.be.false();
  });
});
