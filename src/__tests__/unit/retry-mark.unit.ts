import {expect} from '@loopback/testlab';
import {retryMark} from '../../consumer/retry-mark';

describe('retryMark (outcome marks of tasks that ran)', () => {
  const failing = (times: number) => {
    let calls = 0;
    const mark = async () => {
      calls++;
      if (calls <= times) throw new Error(`down ${calls}`);
    };
    return {mark, calls: () => calls};
  };

  it('retries with growing waits until the mark succeeds', async () => {
    const {mark, calls} = failing(3);
    const waits: number[] = [];
    const recorded = await retryMark(mark, {
      deadlineMs: 60_000,
      minDelayMs: 1,
      maxDelayMs: 3,
      onRetry: (_error, delayMs) => waits.push(delayMs),
    });
    expect(recorded).to.be.true();
    expect(calls()).to.equal(4);
    expect(waits).to.deepEqual([1, 2, 3]);
  });

  it('gives up once its deadline has passed on the given clock', async () => {
    const {mark, calls} = failing(Infinity);
    let now = 0;
    const recorded = await retryMark(mark, {
      deadlineMs: 60_000,
      minDelayMs: 1,
      now: () => now,
      onRetry: () => (now += 30_000),
    });
    expect(recorded).to.be.false();
    expect(calls()).to.equal(3);
  });

  it('gives up at once when the shutdown grace is over', async () => {
    const {mark, calls} = failing(Infinity);
    const graceOver = new AbortController();
    const recorded = await retryMark(mark, {
      deadlineMs: 60_000,
      minDelayMs: 10_000,
      signal: graceOver.signal,
      onRetry: () => setImmediate(() => graceOver.abort()),
    });
    expect(recorded).to.be.false();
    expect(calls()).to.equal(1);
  });
});
