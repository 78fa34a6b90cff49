import {expect} from '@loopback/testlab';
import {Client} from 'pg';
import {toHttpError} from '../../middleware/error-mapping';
import {insertSchedulers} from '../fixtures/test-producer';
import {
  givenCatalog,
  sql,
  TEST_DATABASE_URL,
  truncateAll,
} from '../fixtures/test-database';

async function connected(): Promise<Client> {
  const client = new Client({connectionString: TEST_DATABASE_URL});
  await client.connect();
  return client;
}

/** A statement in flight: `done` turns true once it has answered. */
function racing(promise: Promise<unknown>) {
  const state = {
    done: false,
    result: undefined as Promise<unknown> | undefined,
  };
  state.result = promise
    .then(
      () => 'committed',
      error => error,
    )
    .finally(() => {
      state.done = true;
    });
  return state;
}

/**
 * The API's checks (the ids exist; no scheduler names the calendar) read
 * before the other transaction's write commits: a scheduler saved while its
 * calendar is deleted kept a dangling id, and the producer ignores unknown
 * ids, so the calendar's rule silently stopped applying.
 */
describe('calendar_ids against a concurrent calendar delete (review of issue 26)', () => {
  let saver: Client;
  let deleter: Client;

  beforeEach(async () => {
    await truncateAll();
    await givenCatalog();
    await sql(
      `INSERT INTO calendar (id, name, time_zone, kind) VALUES (1, 'Trading days', 'Europe/London', 'allowed')`,
    );
    saver = await connected();
    deleter = await connected();
  });
  afterEach(async () => {
    await saver.end();
    await deleter.end();
  });

  async function blockedPid(client: Client): Promise<number> {
    return (await client.query('SELECT pg_backend_pid() AS pid')).rows[0].pid;
  }

  /** Until the racing statement waits on a lock, or has answered (no lock to wait on). */
  async function untilWaiting(
    pid: number,
    statement: {done: boolean},
  ): Promise<void> {
    while (!statement.done) {
      const [row] = await sql<{waiting: boolean}>(
        `SELECT wait_event_type = 'Lock' AS waiting FROM pg_stat_activity WHERE pid = $1`,
        [pid],
      );
      if (row?.waiting) return;
      await new Promise(resolve => setImmediate(resolve));
    }
  }

  it('refuses the delete when a scheduler naming the calendar commits first', async () => {
    const [schedulerId] = await insertSchedulers([{schedule: '0 6 * * *'}]);
    const deleterPid = await blockedPid(deleter);
    await saver.query('BEGIN');
    await saver.query(
      `UPDATE scheduler SET calendar_ids = '[1]'::jsonb WHERE id = $1`,
      [schedulerId],
    );
    // The API's 409 check already ran and found no scheduler: the delete goes on.
    const deleting = racing(deleter.query('DELETE FROM calendar WHERE id = 1'));
    await untilWaiting(deleterPid, deleting);
    await saver.query('COMMIT');
    const deleted = await deleting.result;
    expect(deleted).to.have.property('constraint', 'calendar_in_use');
    expect(toHttpError(deleted).statusCode).to.equal(409);
    const [calendar] = await sql(`SELECT id FROM calendar WHERE id = 1`);
    expect(calendar).to.not.be.undefined();
  });

  it('refuses the save when the delete commits first, naming /calendar_ids', async () => {
    const [schedulerId] = await insertSchedulers([{schedule: '0 6 * * *'}]);
    const saverPid = await blockedPid(saver);
    await deleter.query('BEGIN');
    await deleter.query('DELETE FROM calendar WHERE id = 1');
    // The API's 422 check already ran and found the calendar: the save goes on.
    const saving = racing(
      saver.query(
        `UPDATE scheduler SET calendar_ids = '[1, 1]'::jsonb WHERE id = $1`,
        [schedulerId],
      ),
    );
    await untilWaiting(saverPid, saving);
    await deleter.query('COMMIT');
    const saved = await saving.result;
    expect(saved).to.have.property(
      'constraint',
      'scheduler_calendar_ids_exist',
    );
    const body = toHttpError(saved);
    expect(body.statusCode).to.equal(422);
    expect(body.details).to.containDeep([{path: '/calendar_ids'}]);
    const [row] = await sql<{calendar_ids: number[]}>(
      `SELECT calendar_ids FROM scheduler WHERE id = $1`,
      [schedulerId],
    );
    expect(row.calendar_ids).to.deepEqual([]);
  });

  it('still saves duplicates of an existing id and deletes an unused calendar', async () => {
    const [schedulerId] = await insertSchedulers([{schedule: '0 6 * * *'}]);
    await sql(
      `UPDATE scheduler SET calendar_ids = '[1, 1]'::jsonb WHERE id = $1`,
      [schedulerId],
    );
    await sql(`UPDATE scheduler SET calendar_ids = '[]'::jsonb WHERE id = $1`, [
      schedulerId,
    ]);
    await sql(`DELETE FROM calendar WHERE id = 1`);
    expect(await sql(`SELECT id FROM calendar`)).to.deepEqual([]);
  });
});
