import {expect} from '@loopback/testlab';
import {RestartBackoff} from '../../stay-alive/restart-backoff';

describe('RestartBackoff', () => {
  const settings = {baseMs: 1000, maxMs: 8000, stableMs: 60_000};

  it('doubles the delay after each quick crash, up to the cap', () => {
    const backoff = new RestartBackoff(settings);
    const delays = Array.from({length: 7}, () => backoff.nextDelay(10));
    expect(delays).to.deepEqual([1000, 2000, 4000, 8000, 8000, 8000, 8000]);
    expect(backoff.consecutiveCrashes).to.equal(7);
  });

  it('starts again from the base delay after a run that lasted the stable period', () => {
    const backoff = new RestartBackoff(settings);
    expect([10, 10, 10].map(ran => backoff.nextDelay(ran))).to.deepEqual([
      1000, 2000, 4000,
    ]);
    expect(backoff.nextDelay(59_999)).to.equal(8000);
    expect(backoff.nextDelay(60_000)).to.equal(1000);
    expect(backoff.nextDelay(5)).to.equal(2000);
  });

  it('never overflows however long a process keeps crashing', () => {
    const backoff = new RestartBackoff({...settings, maxMs: 3_600_000});
    let last = 0;
    for (let i = 0; i < 2000; i++) last = backoff.nextDelay(0);
    expect(last).to.equal(3_600_000);
  });
});
