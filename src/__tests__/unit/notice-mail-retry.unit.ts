import {expect} from '@loopback/testlab';
import {
  NOTICE_MAIL_RETRY,
  retryDelayMs,
} from '../../notices/notice-mail-sender';

const MINUTE = 60_000;

describe('notice e-mail retry delay', () => {
  it('doubles from the first delay and never exceeds the bound', () => {
    const delays = [1, 2, 3, 4, 5, 6, 7, 8, 12].map(
      attempts => retryDelayMs(attempts, NOTICE_MAIL_RETRY) / MINUTE,
    );
    expect(delays).to.deepEqual([1, 2, 4, 8, 16, 32, 60, 60, 60]);
  });

  it('gives up within a day with the defaults', () => {
    let total = 0;
    for (let attempts = 1; attempts < NOTICE_MAIL_RETRY.maxAttempts; attempts++)
      total += retryDelayMs(attempts, NOTICE_MAIL_RETRY);
    expect(total).to.be.below(24 * 60 * MINUTE);
  });
});
