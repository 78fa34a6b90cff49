import {expect} from '@loopback/testlab';
import {nextRun} from '../../scheduling/next-run';

const NOW = new Date('2026-11-21T10:00:00Z');
const recurring = (schedule: string) => ({
  schedule,
  date_time: null,
  status: true,
  stay_alive: false,
});

describe('next run of a scheduler', () => {
  it('finds the next cron match after now, in the given time zone', () => {
    expect(nextRun(recurring('0 2 * * *'), NOW, 'UTC').at).to.eql(
      new Date('2026-11-22T02:00:00Z'),
    );
    expect(nextRun(recurring('0 2 * * *'), NOW, 'Europe/Berlin').at).to.eql(
      new Date('2026-11-22T01:00:00Z'),
    );
    expect(nextRun(recurring('*/15 * * * *'), NOW, 'UTC').at).to.eql(
      new Date('2026-11-21T10:15:00Z'),
    );
  });

  it('crosses month and year boundaries', () => {
    expect(
      nextRun(recurring('30 0 1 * *'), new Date('2026-12-31T23:00:00Z'), 'UTC')
        .at,
    ).to.eql(new Date('2027-01-01T00:30:00Z'));
  });

  it('gives a one-time scheduler its date while it lies ahead', () => {
    const at = new Date('2026-11-22T08:00:00Z');
    expect(
      nextRun({...recurring(''), schedule: null, date_time: at}, NOW, 'UTC'),
    ).to.eql({at});
    expect(
      nextRun(
        {...recurring(''), schedule: null, date_time: new Date(0)},
        NOW,
        'UTC',
      ),
    ).to.eql({at: null, problem: 'one-time run is past'});
  });

  it('gives none for inactive, stay-alive and invalid schedulers, saying why', () => {
    expect(
      nextRun({...recurring('* * * * *'), status: false}, NOW, 'UTC'),
    ).to.eql({at: null, problem: 'inactive'});
    expect(
      nextRun({...recurring('* * * * *'), stay_alive: true}, NOW, 'UTC'),
    ).to.eql({at: null, problem: 'stay-alive'});
    const invalid = nextRun(recurring('61 * * * *'), NOW, 'UTC');
    expect(invalid.at).to.be.null();
    expect(invalid.problem).to.match(/^invalid schedule: /);
  });
});
