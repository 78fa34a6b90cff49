import {expect, sinon} from '@loopback/testlab';
import {MinuteTicker} from '../../producer/minute-ticker';
import {LogCapture} from '../fixtures/log-capture';

describe('MinuteTicker', () => {
  let clock: sinon.SinonFakeTimers;
  beforeEach(() => {
    clock = sinon.useFakeTimers(new Date('2026-11-21T10:00:42.000Z'));
  });
  afterEach(() => clock.restore());

  const iso = (dates: Date[]) => dates.map(d => d.toISOString().slice(11, 23));

  it('ticks at once, then just after every minute boundary', async () => {
    const ticks: Date[] = [];
    const ticker = new MinuteTicker(
      () => new Date(),
      async now => ticks.push(now),
      new LogCapture().logger,
    );
    ticker.start();
    await clock.tickAsync(0);
    await clock.tickAsync(3 * 60_000);
    await ticker.stop();
    expect(iso(ticks)).to.deepEqual([
      '10:00:42.000',
      '10:01:00.100',
      '10:02:00.100',
      '10:03:00.100',
    ]);
  });

  it('never overlaps a slow tick and re-aligns to the clock after it', async () => {
    const ticks: Date[] = [];
    const ticker = new MinuteTicker(
      () => new Date(),
      async now => {
        ticks.push(now);
        if (ticks.length === 2)
          await new Promise(resolve => setTimeout(resolve, 150_000));
      },
      new LogCapture().logger,
    );
    ticker.start();
    await clock.tickAsync(5 * 60_000);
    await ticker.stop();
    expect(iso(ticks)).to.deepEqual([
      '10:00:42.000',
      '10:01:00.100',
      '10:04:00.100',
      '10:05:00.100',
    ]);
  });

  it('logs a failed tick and keeps ticking', async () => {
    const logs = new LogCapture();
    let calls = 0;
    const ticker = new MinuteTicker(
      () => new Date(),
      async () => {
        calls++;
        if (calls === 1) throw new Error('database unreachable');
      },
      logs.logger,
    );
    ticker.start();
    await clock.tickAsync(60_000);
    await ticker.stop();
    expect(calls).to.equal(2);
    expect(logs.find('Tick failed')[0]).to.containDeep({
      level: 'error',
      error: 'database unreachable',
    });
  });

  it('stop() waits for the tick in flight and is idempotent', async () => {
    let finished = false;
    let calls = 0;
    const ticker = new MinuteTicker(
      () => new Date(),
      async () => {
        calls++;
        await new Promise(resolve => setTimeout(resolve, 1000));
        finished = true;
      },
      new LogCapture().logger,
    );
    ticker.start();
    const stopped = ticker.stop();
    await clock.tickAsync(1000);
    await stopped;
    await ticker.stop();
    expect(finished).to.be.true();
    await clock.tickAsync(120_000);
    expect(calls).to.equal(1);
  });
});
