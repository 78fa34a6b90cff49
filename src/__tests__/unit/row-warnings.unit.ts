import {expect} from '@loopback/testlab';
import {RowWarnings} from '../../producer/row-warnings';
import {LogCapture} from '../fixtures/log-capture';

describe('RowWarnings (the producer warns once per bad row and text)', () => {
  const badCron = {
    schedulerId: 7,
    field: 'schedule' as const,
    value: '61 * * * *',
    problems: ['minute out of range'],
  };

  it('warns about an unreadable scheduler once, and again when its text changes', () => {
    const logs = new LogCapture();
    const warnings = new RowWarnings(logs.logger);
    warnings.invalidRows([badCron]);
    warnings.invalidRows([badCron]);
    warnings.invalidRows([{...badCron, value: '99 * * * *'}]);
    const found = logs.find('Scheduler skipped: unreadable schedule');
    expect(found.map(record => record.schedule)).to.deepEqual([
      '61 * * * *',
      '99 * * * *',
    ]);
    expect(found[0]).to.containDeep({
      level: 'warn',
      scheduler_id: 7,
      field: 'schedule',
      problems: ['minute out of range'],
    });
  });

  it('warns about an unreadable calendar entry once per calendar and problems', () => {
    const logs = new LogCapture();
    const warnings = new RowWarnings(logs.logger);
    const problem = {calendarId: 3, problems: ['dates[0]: not a date']};
    warnings.calendarProblems([problem, problem]);
    warnings.calendarProblems([problem, {calendarId: 4, problems: ['x']}]);
    const found = logs.find('Calendar entry unreadable: left out');
    expect(found.map(record => record.calendar_id)).to.deepEqual([3, 4]);
  });

  it('warns about a calendar again when its problems change', () => {
    const logs = new LogCapture();
    const warnings = new RowWarnings(logs.logger);
    warnings.calendarProblems([{calendarId: 3, problems: ['dates[0]: bad']}]);
    warnings.calendarProblems([{calendarId: 3, problems: ['dates[1]: bad']}]);
    const found = logs.find('Calendar entry unreadable: left out');
    expect(found.map(record => record.problems)).to.deepEqual([
      ['dates[0]: bad'],
      ['dates[1]: bad'],
    ]);
  });

  it('bounds the memory of both kinds together: calendars count towards the 10,000', () => {
    const logs = new LogCapture();
    const warnings = new RowWarnings(logs.logger);
    warnings.invalidRows([badCron]);
    warnings.calendarProblems(
      Array.from({length: 10_000}, (_, i) => ({
        calendarId: i + 1,
        problems: ['x'],
      })),
    );
    // The 10,000 calendars filled the memory the scheduler's warning was in.
    warnings.invalidRows([badCron]);
    expect(logs.find('Scheduler skipped: unreadable schedule')).to.have.length(
      2,
    );
  });

  it('keeps a scheduler and a calendar of the same id apart', () => {
    const logs = new LogCapture();
    const warnings = new RowWarnings(logs.logger);
    warnings.invalidRows([{...badCron, schedulerId: 3}]);
    warnings.calendarProblems([{calendarId: 3, problems: ['x']}]);
    expect(logs.find('Scheduler skipped: unreadable schedule')).to.have.length(
      1,
    );
    expect(logs.find('Calendar entry unreadable: left out')).to.have.length(1);
  });

  it('forgets what it warned about past 10,000 rows, so memory stays bounded', () => {
    const logs = new LogCapture();
    const warnings = new RowWarnings(logs.logger);
    const rows = Array.from({length: 10_001}, (_, i) => ({
      ...badCron,
      schedulerId: i + 1,
    }));
    warnings.invalidRows(rows);
    // The 10,001st cleared the memory: the first warns again.
    warnings.invalidRows([rows[0], rows[10_000]]);
    const ids = logs
      .find('Scheduler skipped: unreadable schedule')
      .map(record => record.scheduler_id);
    expect(ids).to.have.length(10_002);
    expect(ids[10_001]).to.equal(1);
  });
});
