import {expect} from '@loopback/testlab';
import {
  pastDateTimeErrors,
  schedulerRuleErrors,
  SchedulerShape,
} from '../../validation/scheduler-rules';

function badPaths(record: SchedulerShape): string[] {
  return schedulerRuleErrors(record).map(detail => detail.path);
}

describe('scheduler rules', () => {
  it('accepts a recurring report scheduler', () => {
    expect(
      schedulerRuleErrors({schedule: '0 6 * * *', report_id: 1}),
    ).to.deepEqual([]);
  });

  it('accepts a one-time reminder scheduler', () => {
    expect(
      schedulerRuleErrors({date_time: '2027-01-01T09:00:00Z', reminder_id: 3}),
    ).to.deepEqual([]);
  });

  it('accepts a stay-alive worker without any schedule', () => {
    expect(schedulerRuleErrors({stay_alive: true, worker_id: 2})).to.deepEqual(
      [],
    );
  });

  it('requires one task kind and names all four fields when none is given', () => {
    expect(badPaths({schedule: '* * * * *'})).to.deepEqual([
      '/report_id',
      '/worker_id',
      '/reminder_id',
      '/http_target_id',
    ]);
  });

  it('rejects two task kinds, naming the two given', () => {
    const errors = schedulerRuleErrors({
      schedule: '* * * * *',
      report_id: 1,
      worker_id: 2,
    });
    expect(errors.map(e => e.path)).to.deepEqual(['/report_id', '/worker_id']);
    expect(errors[0].message).to.match(/got report_id, worker_id/);
  });

  it('treats null like absent', () => {
    expect(
      badPaths({
        schedule: '* * * * *',
        report_id: 1,
        worker_id: null,
        date_time: null,
      }),
    ).to.deepEqual([]);
  });

  it('rejects both schedule and date_time', () => {
    expect(
      badPaths({
        schedule: '* * * * *',
        date_time: '2027-01-01T00:00:00Z',
        report_id: 1,
      }),
    ).to.deepEqual(['/schedule', '/date_time']);
  });

  it('rejects neither schedule nor date_time on a scheduled task', () => {
    expect(badPaths({report_id: 1})).to.deepEqual(['/schedule', '/date_time']);
  });

  it('rejects a stay-alive scheduler without worker_id or with a schedule', () => {
    expect(
      badPaths({stay_alive: true, report_id: 1, schedule: '* * * * *'}),
    ).to.deepEqual(['/worker_id', '/schedule']);
  });

  it('reports an expression that can never fire on /schedule', () => {
    expect(badPaths({schedule: '0 0 30 2 *', report_id: 1})).to.deepEqual([
      '/schedule',
    ]);
  });

  it('reports cron syntax problems on /schedule', () => {
    const errors = schedulerRuleErrors({schedule: '* * * *', report_id: 1});
    expect(errors).to.have.length(1);
    expect(errors[0]).to.containDeep({path: '/schedule', code: 'cron'});
  });
});

describe('pastDateTimeErrors', () => {
  const now = new Date('2026-11-27T10:05:20.000Z');

  it('accepts a moment later in the current minute while a catch-up window exists', () => {
    expect(pastDateTimeErrors('2026-11-27T10:05:40.000Z', now, 5)).to.deepEqual(
      [],
    );
    expect(
      pastDateTimeErrors('2026-11-27T10:04:59.999Z', now, 5)[0],
    ).to.containDeep({path: '/date_time', code: 'past'});
  });

  it('refuses the current minute with CRON_CATCHUP_MINUTES=0, which no tick would fire (review: it was accepted, then switched off as missed)', () => {
    const [detail] = pastDateTimeErrors('2026-11-27T10:05:40.000Z', now, 0);
    expect(detail).to.containDeep({path: '/date_time', code: 'past'});
    expect(detail.message).to.match(/2026-11-27T10:06:00\.000Z/);
    expect(pastDateTimeErrors('2026-11-27T10:06:00.000Z', now, 0)).to.deepEqual(
      [],
    );
  });

  it('with CRON_CATCHUP_MINUTES=0 and the boundary under 5 s away, waits for the minute after it (review: a commit after the tick read its candidates was switched off as missed)', () => {
    const late = new Date('2026-11-27T10:05:57.000Z');
    expect(
      pastDateTimeErrors('2026-11-27T10:06:00.000Z', late, 0)[0],
    ).to.containDeep({path: '/date_time', code: 'past'});
    expect(
      pastDateTimeErrors('2026-11-27T10:07:00.000Z', late, 0),
    ).to.deepEqual([]);
  });
});
