import {expect} from '@loopback/testlab';
import {Client, Pool} from 'pg';
import {
  MARK_PUBLISHED,
  MARK_PUBLISHED_CHUNK,
  markPublished,
} from '../../database/mark-published';
import {publishClaims} from '../../producer/claim-publisher';
import type {Claim} from '../../producer/execution-claimer';
import type {TaskPublisher} from '../../queue/task-publisher';
import {
  givenABusyLedger,
  lockHolder,
  lockRun,
  untilSomeoneWaitsOnALock,
} from '../fixtures/lock-waits';
import {
  givenCatalog,
  sql,
  TEST_DATABASE_URL,
  truncateAll,
} from '../fixtures/test-database';

describe('markPublished', () => {
  let pool: Pool;
  before(() => {
    pool = new Pool({connectionString: TEST_DATABASE_URL, max: 1});
  });
  after(() => pool.end());
  beforeEach(async () => {
    await truncateAll();
    await givenCatalog();
  });

  /**
   * `count` claimed runs of a new scheduler, their ids in order; `busy`
   * puts 5,000 analysed runs of it first (see givenABusyLedger).
   */
  async function givenClaimedRuns(count: number, busy = false) {
    const [{id: schedulerId}] = await sql<{id: number}>(
      `INSERT INTO scheduler (description, schedule, worker_id) VALUES ('t', '* * * * *', 1) RETURNING id`,
    );
    if (busy) await givenABusyLedger(schedulerId);
    const rows = await sql<{id: string}>(
      `INSERT INTO scheduler_execution (scheduler_id, execution_key, container_id, status)
       SELECT $1, 'k' || n, 'test', 'claimed' FROM generate_series(1, $2::int) n
       RETURNING id`,
      [schedulerId, count],
    );
    return rows.map(row => Number(row.id));
  }

  it('marks claimed runs published, and leaves runs a consumer already took alone', async () => {
    const [{id: schedulerId}] = await sql<{id: number}>(
      `INSERT INTO scheduler (description, schedule, worker_id) VALUES ('t', '* * * * *', 1) RETURNING id`,
    );
    const rows = await sql<{id: string}>(
      `INSERT INTO scheduler_execution (scheduler_id, execution_key, container_id, status)
       SELECT $1, 'k' || n, 'test', s
         FROM unnest(ARRAY['claimed', 'running', 'succeeded']) WITH ORDINALITY AS t(s, n)
       RETURNING id`,
      [schedulerId],
    );
    const at = new Date('2026-11-21T10:00:00.123Z');
    await markPublished(pool, new Map(rows.map(row => [Number(row.id), at])));
    const after = await sql<{status: string; published_at: Date}>(
      `SELECT status, published_at FROM scheduler_execution ORDER BY id`,
    );
    expect(after).to.deepEqual([
      {status: 'published', published_at: at},
      {status: 'running', published_at: at},
      {status: 'succeeded', published_at: at},
    ]);
  });

  const markings: Array<
    [string, (runs: Map<number, Date>) => Promise<unknown>]
  > = [
    ['markPublished', runs => markPublished(pool, runs)],
    // Without the sort before it: the statement's own lock order.
    [
      'its statement alone',
      runs =>
        pool.query(MARK_PUBLISHED, [[...runs.keys()], [...runs.values()]]),
    ],
  ];
  for (const [name, mark] of markings) {
    it(`locks the runs in id order whatever the order given (${name}), so consumers starting runs in id order never deadlock with it`, async () => {
      const ids = await givenClaimedRuns(3, true);
      const at = new Date('2026-11-25T17:00:00.250Z');
      // A consumer's statement has started the middle run and goes on in id order.
      const consumer = await lockHolder();
      try {
        await consumer.query('BEGIN');
        await lockRun(consumer, ids[1]);
        // Confirms in any order: here the last run's came first.
        const marking = mark(new Map([...ids].reverse().map(id => [id, at])));
        marking.catch(() => undefined); // awaited below; a deadlock fails it
        await untilSomeoneWaitsOnALock();
        // Free only if the marking waits on the middle run without holding the last.
        await lockRun(consumer, ids[2]);
        await consumer.query('COMMIT');
        await marking;
      } finally {
        await consumer.end();
      }
      const after = await sql<{status: string; published_at: Date}>(
        `SELECT status, published_at FROM scheduler_execution WHERE id = ANY($1) ORDER BY id`,
        [ids],
      );
      expect(after).to.deepEqual(
        ids.map(() => ({status: 'published', published_at: at})),
      );
    });
  }

  it('marks more runs than one statement holds, each with its own confirm time', async () => {
    const count = 2 * MARK_PUBLISHED_CHUNK + 7;
    const ids = await givenClaimedRuns(count);
    const base = Date.parse('2026-11-25T17:00:00.000Z');
    // Confirm times by id, given in no particular order.
    const confirmations = new Map(
      [...ids].reverse().map(id => [id, new Date(base + id)]),
    );
    await markPublished(pool, confirmations);
    const [row] = await sql<{published: number; right_time: number}>(
      `SELECT count(*) FILTER (WHERE status = 'published')::int AS published,
              count(*) FILTER (WHERE published_at = $1::timestamptz + id * interval '1 millisecond')::int AS right_time
         FROM scheduler_execution`,
      [new Date(base)],
    );
    expect(row).to.eql({published: count, right_time: count});
  });

  it('marks the runs of the later statements when one statement fails, and says so', async () => {
    const ids = await givenClaimedRuns(3 * MARK_PUBLISHED_CHUNK);
    // A lock timeout stands in for any error of one statement (a deadlock's
    // victim twice, a statement timeout, a terminated session).
    const impatient = new Pool({
      connectionString: TEST_DATABASE_URL,
      max: 1,
      options: '-c lock_timeout=300',
    });
    const consumer = await lockHolder();
    const at = new Date('2026-11-25T17:00:00.250Z');
    try {
      await consumer.query('BEGIN');
      await lockRun(consumer, ids[0]); // a run of the first statement
      await expect(
        markPublished(impatient, new Map(ids.map(id => [id, at]))),
      ).to.be.rejectedWith(/lock timeout/);
      await consumer.query('COMMIT');
    } finally {
      await consumer.end();
      await impatient.end();
    }
    const [row] = await sql<{first: number; later: number}>(
      `SELECT count(*) FILTER (WHERE id = ANY($1))::int AS first,
              count(*) FILTER (WHERE NOT id = ANY($1))::int AS later
         FROM scheduler_execution WHERE published_at = $2`,
      [ids.slice(0, MARK_PUBLISHED_CHUNK), at],
    );
    expect(row).to.eql({first: 0, later: 2 * MARK_PUBLISHED_CHUNK});
  });

  describe('after a failed statement (hostile review)', () => {
    it("throws the deadlock (the first error) when its victim's retry fails inside the caller's transaction", async () => {
      const [r1, r2] = await givenClaimedRuns(2);
      const caller = new Client({connectionString: TEST_DATABASE_URL});
      await caller.connect();
      const other = await lockHolder();
      try {
        await caller.query('BEGIN');
        // The caller's session is the one that finds the deadlock (its victim).
        await caller.query(`SET LOCAL deadlock_timeout = '100ms'`);
        await lockRun(caller, r2);
        await other.query('BEGIN');
        await lockRun(other, r1);
        const waiting = lockRun(other, r2);
        waiting.catch(() => undefined);
        await untilSomeoneWaitsOnALock();
        const error = await markPublished(
          caller,
          new Map([[r1, new Date()]]),
        ).then(
          () => undefined,
          (e: {code?: string; message?: string}) => e,
        );
        await caller.query('ROLLBACK');
        await waiting;
        await other.query('ROLLBACK');
        expect({code: error?.code, message: error?.message}).to.eql({
          code: '40P01',
          message: 'deadlock detected',
        });
      } finally {
        await caller.end();
        await other.end();
      }
    });

    it('switches off a one-time scheduler whose run the broker confirmed and the marks recorded, when an earlier statement failed', async () => {
      const ids = await givenClaimedRuns(2 * MARK_PUBLISHED_CHUNK);
      const slot = new Date('2026-11-25T17:00:00Z');
      const [{id: oneTime}] = await sql<{id: number}>(
        `INSERT INTO scheduler (description, date_time, reminder_id) VALUES ('once', $1, 1) RETURNING id`,
        [slot],
      );
      const [{id: oneTimeRun}] = await sql<{id: string}>(
        `INSERT INTO scheduler_execution (scheduler_id, execution_key, container_id, status, slot)
         VALUES ($1, 'once', 'test', 'claimed', $2) RETURNING id`,
        [oneTime, slot],
      );
      const claim = (id: number, schedulerId: number, isOneTime: boolean) =>
        ({
          execution_id: id,
          execution_key: `k${id}`,
          slot,
          one_time: isOneTime,
          scheduler_id: schedulerId,
          payload: {type: 'reminder', id: 1, scheduler_id: schedulerId},
        }) as unknown as Claim;
      const claims = [
        ...ids.map(id => claim(id, 0, false)),
        claim(Number(oneTimeRun), oneTime, true),
      ];
      const at = new Date();
      const publisher = {
        publish: async (tasks: Array<{executionId: number}>) =>
          new Map(tasks.map(task => [task.executionId, at])),
      } as unknown as TaskPublisher;
      const impatient = new Pool({
        connectionString: TEST_DATABASE_URL,
        max: 1,
        options: '-c lock_timeout=300',
      });
      const consumer = await lockHolder();
      try {
        await consumer.query('BEGIN');
        await lockRun(consumer, ids[0]); // a run of the first statement
        await expect(
          publishClaims(impatient, publisher, claims),
        ).to.be.rejected();
        await consumer.query('COMMIT');
      } finally {
        await consumer.end();
        await impatient.end();
      }
      const [run] = await sql<{status: string}>(
        `SELECT status FROM scheduler_execution WHERE id = $1`,
        [oneTimeRun],
      );
      const [scheduler] = await sql<{status: boolean}>(
        `SELECT status FROM scheduler WHERE id = $1`,
        [oneTime],
      );
      // Marked published, so the sweeper never sends it again: the publish
      // itself switches its scheduler off, whatever the earlier marks did.
      expect({run: run.status, schedulerActive: scheduler.status}).to.eql({
        run: 'published',
        schedulerActive: false,
      });
    });
  });
});
