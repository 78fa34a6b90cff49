import {expect} from '@loopback/testlab';
import {AuthBindings} from '../../keys';
import {asUser} from '../fixtures/security';
import {givenRunningApp, TestApp} from '../fixtures/test-app';
import {sql, truncateAll} from '../fixtures/test-database';

interface Refusal {
  changes: {key_prefix: [null, string]; unaudited_refusals?: [null, number]};
}

describe('Refused API-key uses in the audit log, bounded (issue 27)', () => {
  let given: TestApp;
  let now = new Date('2026-11-24T10:00:00Z');
  const advance = (seconds: number) =>
    (now = new Date(now.getTime() + seconds * 1000));

  before(async () => {
    given = await givenRunningApp({}, app =>
      app.bind(AuthBindings.CLOCK).to(() => now),
    );
  });
  after(() => given.app.stop());
  beforeEach(async () => {
    advance(3600);
    await truncateAll();
  });

  const refuse = (key: string) =>
    asUser(given.client, {token: key}).get('/api/schedulers').expect(401);
  const refusals = () =>
    sql<Refusal>(
      `SELECT changes FROM audit_event
        WHERE entity = 'api-key' AND action = 'refused' ORDER BY id`,
    );

  it('writes at most one row per key prefix per minute, and counts the rest on the next', async () => {
    const flood = 'tsk_' + 'B'.repeat(43);
    for (let i = 0; i < 40; i++) await refuse(flood);
    await refuse('tsk_' + 'C'.repeat(43));
    advance(30);
    await refuse(flood);
    expect((await refusals()).map(r => r.changes.key_prefix[1])).to.eql([
      'tsk_BBBB',
      'tsk_CCCC',
    ]);
    advance(31);
    await refuse(flood);
    const rows = await refusals();
    expect(rows).to.have.length(3);
    expect(rows[2].changes).to.eql({
      key_prefix: [null, 'tsk_BBBB'],
      // The 40 refusals of the first minute and the one 30 s later, less the audited one.
      unaudited_refusals: [null, 40],
    });
  });

  // Issue 27 review: a flood whose keys each start differently (anyone can
  // send them, signed in or not) would write one audit row per request.
  it('audits at most 100 prefixes a minute; the rest share one counted row', async () => {
    const distinct = 130;
    for (let i = 0; i < distinct; i++) {
      await refuse(`tsk_${i.toString(36).padStart(4, '0')}${'A'.repeat(39)}`);
    }
    const rows = await refusals();
    expect(rows).to.have.length(101);
    expect(rows[100].changes.key_prefix[1]).to.equal('tsk_*');
    advance(61);
    await refuse(`tsk_zzzz${'A'.repeat(39)}`);
    const overflow = (await refusals()).slice(101);
    expect(overflow.map(r => r.changes.key_prefix[1])).to.eql(['tsk_zzzz']);
  });
});
