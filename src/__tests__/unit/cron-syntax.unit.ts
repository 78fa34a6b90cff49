import {expect} from '@loopback/testlab';
import {
  cronSyntaxErrors,
  isValidCronExpression,
} from '../../scheduling/cron-syntax';

describe("cron syntax (the spec's five fields plus names, 7 and macros)", () => {
  const valid = [
    '* * * * *',
    '0 6 * * *',
    '0 0 1 1 0',
    '59 23 31 12 6',
    '*/15 * * * *',
    '5-20/5 * * * *',
    '0 9-17 * * 1-5',
    '0,15,30,45 * * * *',
    '0 0 29 2 *',
    '1-3,10,20-30/5 */2 1,15 */3 0,6',
    '  0 6 * * *  ',
    '0  6 * * *',
    '0 9 * * MON-FRI',
    '0 9 * * mon-fri',
    '0 0 1 JAN,Jul *',
    '0 0 * * 7',
    '0 0 * * 5-7',
    '0 0 * * MON-FRI/2',
    '0 0 * JAN-DEC/3 SUN',
    '@yearly',
    '@annually',
    '@monthly',
    '@weekly',
    '@daily',
    '@midnight',
    '@hourly',
    ' @Daily ',
    '0 0 * * 0,7',
    '0 0 * * SUN,7',
    '1,1 * * * *',
  ];
  for (const expression of valid) {
    it(`accepts ${JSON.stringify(expression)}`, () => {
      expect(cronSyntaxErrors(expression)).to.deepEqual([]);
      expect(isValidCronExpression(expression)).to.be.true();
    });
  }

  const invalid: Array<[string, RegExp]> = [
    ['', /exactly five space-separated fields .* got 0/],
    ['   ', /exactly five space-separated fields .* got 0/],
    ['* * * *', /got 4/],
    [
      '0 * * * * *',
      /got 6 \(seconds and year fields are not supported; supported: five/,
    ],
    ['60 * * * *', /minute value 60 is out of range 0-59/],
    ['* 24 * * *', /hour value 24 is out of range 0-23/],
    ['* * 0 * *', /day-of-month value 0 is out of range 1-31/],
    ['* * 32 * *', /day-of-month value 32/],
    ['* * * 13 *', /month value 13 is out of range 1-12/],
    ['* * * 0 *', /month value 0/],
    ['* * * * 8', /day-of-week value 8 is out of range 0-7/],
    ['*/0 * * * *', /minute step 0 must be between 1 and 60/],
    ['*/61 * * * *', /minute step 61/],
    ['20-5 * * * *', /minute range 20-5 runs backwards/],
    ['5/15 * * * *', /a step needs \* or a range before it/],
    ['1,,2 * * * *', /minute element "" is not one of/],
    ['* * * FOO *', /unknown month name "FOO"; use JAN-DEC or numbers/],
    ['* * * * MONDAY', /unknown day-of-week name "MONDAY"; use SUN-SAT/],
    ['JAN * * * *', /minute takes numbers only, got "JAN"/],
    ['* * * * SUN-MON-TUE', /day-of-week element "SUN-MON-TUE"/],
    ['0 0 * * FRI-MON', /day-of-week range FRI-MON runs backwards/],
    ['0 0 * * MON/2', /a step needs \* or a range before it/],
    ['0 0 ? * *', /Quartz syntax\) are not supported; supported: five fields/],
    ['0 0 L * *', /Quartz syntax/],
    ['0 0 15W * *', /Quartz syntax/],
    ['0 0 LW * *', /Quartz syntax/],
    ['0 0 * * 5L', /Quartz syntax/],
    ['0 0 * * FRI#3', /Quartz syntax/],
    ['0 0 * * 5#3', /Quartz syntax/],
    ['0\t6 * * *', /only digits, letters of month and weekday names, spaces/],
    ['@reboot', /@reboot is not supported.*supported: five fields.*@hourly/],
    ['@every 5m', /unknown macro "@every 5m"; supported/],
    ['\u00a0@daily', /only digits, letters/],
    ['0 0 * * * @daily', /a macro stands alone/],
    ['0 0 0 * * * 2026', /got 7 \(seconds and year fields are not supported/],
    ['1-2-3 * * * *', /minute element "1-2-3"/],
  ];
  for (const [expression, message] of invalid) {
    it(`rejects ${JSON.stringify(expression)}`, () => {
      const errors = cronSyntaxErrors(expression);
      expect(errors.join('\n')).to.match(message);
      expect(isValidCronExpression(expression)).to.be.false();
    });
  }

  it('reports every bad field, not only the first', () => {
    expect(cronSyntaxErrors('61 25 * * *')).to.have.length(2);
  });
});
