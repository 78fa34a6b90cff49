import {expect} from '@loopback/testlab';
import {PeriodicPass} from '../../producer/periodic-pass';

const tick = (ms: number) => new Promise(resolve => setTimeout(resolve, ms));

/** A pass that takes `ms`, counting passes and the most ever in flight at once. */
function countedPass(ms: number) {
  const seen = {inFlight: 0, most: 0, passes: 0};
  const pass = async () => {
    seen.inFlight++;
    seen.most = Math.max(seen.most, seen.inFlight);
    await tick(ms);
    seen.inFlight--;
    seen.passes++;
  };
  return {pass, seen};
}

describe('PeriodicPass', () => {
  it('runs passes one after another, never two at once, timed from the end of each', async () => {
    const {pass, seen} = countedPass(15); // longer than the 1 ms between passes
    const periodic = new PeriodicPass(pass, () => 1);
    periodic.start(0);
    periodic.start(0); // a second start is ignored, not a second chain
    await tick(120);
    await periodic.stop();
    expect(seen.most).to.equal(1);
    expect(seen.passes).to.be.aboveOrEqual(2);
  });

  it('waits in stop for the pass in flight and starts none after it', async () => {
    let finished = 0;
    let started = 0;
    const periodic = new PeriodicPass(
      async () => {
        started++;
        await tick(30);
        finished++;
      },
      () => 0,
    );
    periodic.start(0);
    await tick(10);
    await periodic.stop();
    expect({started, finished}).to.deepEqual({started: 1, finished: 1});
    await tick(30);
    expect(started).to.equal(1);
    await periodic.stop(); // idempotent
  });

  it('asks for the next delay after each pass', async () => {
    const delays: number[] = [];
    let passes = 0;
    const periodic = new PeriodicPass(
      async () => {
        passes++;
      },
      () => {
        const delay = passes < 3 ? 1 : 60_000;
        delays.push(delay);
        return delay;
      },
    );
    periodic.start(0);
    await tick(60);
    await periodic.stop();
    expect(passes).to.equal(3);
    expect(delays).to.deepEqual([1, 1, 60_000]);
  });

  it('does not run a first pass before its delay, nor after a stop inside it', async () => {
    let passes = 0;
    const periodic = new PeriodicPass(
      async () => {
        passes++;
      },
      () => 0,
    );
    periodic.start(50);
    await tick(10);
    await periodic.stop();
    await tick(60);
    expect(passes).to.equal(0);
  });

  it('keeps one chain when started again before a stop it was not waited for has ended', async () => {
    const {pass, seen} = countedPass(20);
    const periodic = new PeriodicPass(pass, () => 1);
    periodic.start(0);
    await tick(5); // a pass is in flight
    const stopping = periodic.stop();
    periodic.start(0); // before the pass in flight has ended
    await tick(150);
    await stopping;
    await periodic.stop();
    expect(seen.most).to.equal(1);
  });
});
