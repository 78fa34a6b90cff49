import {expect, sinon} from '@loopback/testlab';
import {
  AFTER_BOUNDARY_MS,
  MinuteTicker,
  READ_AHEAD_MS,
  WARM_UP_MS,
} from '../../producer/minute-ticker';
import {LogCapture} from '../fixtures/log-capture';

describe('MinuteTicker', () => {
  let clock: sinon.SinonFakeTimers;
  beforeEach(() => {
    clock = sinon.useFakeTimers(new Date('2026-11-21T10:00:42.000Z'));
  });
  afterEach(() => clock.restore());

  const iso = (dates: Date[]) => dates.map(d => d.toISOString().slice(11, 23));

  /** Starts `ticker`, lets `ms` of fake time pass, and stops it. */
  async function runFor(ticker: MinuteTicker, ms: number): Promise<void> {
    ticker.start();
    await clock.tickAsync(0);
    await clock.tickAsync(ms);
    await ticker.stop();
  }

  it('ticks at once, then just after every minute boundary', async () => {
    const ticks: Date[] = [];
    const ticker = new MinuteTicker(
      () => new Date(),
      async now => ticks.push(now),
      new LogCapture().logger,
    );
    await runFor(ticker, 3 * 60_000);
    expect(iso(ticks)).to.deepEqual([
      '10:00:42.000',
      '10:01:00.010',
      '10:02:00.010',
      '10:03:00.010',
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
      '10:01:00.010',
      '10:04:00.010',
      '10:05:00.010',
    ]);
  });

  it('never ticks before the boundary while the clock runs slower than its timers', async () => {
    // NTP slews a wall clock by up to 0.05 %: about 30 ms in a minute, more
    // than the margin after the boundary. Here it runs 0.1 % slow, so each
    // timer ends a little before the boundary by the clock.
    const start = Date.now();
    const ticks: Date[] = [];
    const ticker = new MinuteTicker(
      () => new Date(start + (Date.now() - start) * 0.999),
      async now => ticks.push(now),
      new LogCapture().logger,
    );
    await runFor(ticker, 3 * 60_000 + 500);
    const later = ticks.slice(1);
    expect(later.map(t => t.toISOString().slice(11, 16))).to.deepEqual([
      '10:01',
      '10:02',
      '10:03',
    ]);
    for (const tick of later) {
      expect(tick.getUTCSeconds()).to.equal(0);
      expect(tick.getUTCMilliseconds()).to.be.below(AFTER_BOUNDARY_MS + 5);
    }
  });

  it('ticks within 2 ms of its time though the OS wakes long sleeps late (0.1 % of the timeout, as Linux does)', async () => {
    // Linux lets epoll_wait, where Node sleeps until its next timer, end up
    // to 0.1 % of the timeout late (at most 100 ms): a timer armed a minute
    // ahead ticked 20-60 ms after the boundary, and every run waited.
    const fakeSetTimeout = global.setTimeout;
    global.setTimeout = ((fn: () => void, ms = 0) =>
      fakeSetTimeout(
        fn,
        ms + Math.min(100, Math.floor(ms / 1000)),
      )) as typeof setTimeout;
    const ticks: Date[] = [];
    try {
      const ticker = new MinuteTicker(
        () => new Date(),
        async now => ticks.push(now),
        new LogCapture().logger,
      );
      await runFor(ticker, 3 * 60_000 + 500);
    } finally {
      global.setTimeout = fakeSetTimeout;
    }
    const later = ticks.slice(1);
    expect(later).to.have.length(3);
    for (const tick of later) {
      expect(tick.getUTCSeconds()).to.equal(0);
      expect(tick.getUTCMilliseconds()).to.be.within(
        AFTER_BOUNDARY_MS,
        AFTER_BOUNDARY_MS + 2,
      );
    }
  });

  it('keeps ticking every minute by a clock set back an hour', async () => {
    let offset = 0;
    const ticks: Date[] = [];
    const ticker = new MinuteTicker(
      () => new Date(Date.now() + offset),
      async now => {
        ticks.push(now);
        // Set back while the ticker waits for the next boundary.
        if (ticks.length === 1) setTimeout(() => (offset = -3_600_000), 1000);
      },
      new LogCapture().logger,
    );
    await runFor(ticker, 2 * 60_000);
    expect(iso(ticks)).to.deepEqual([
      '10:00:42.000',
      '09:01:00.010',
      '09:02:00.010',
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

  describe('warming up', () => {
    it('wakes what the tick uses WARM_UP_MS before each tick', async () => {
      const events: string[] = [];
      const ticker = new MinuteTicker(
        () => new Date(),
        async now => events.push(`tick ${iso([now])[0]}`),
        new LogCapture().logger,
        1,
        undefined,
        async () => events.push(`warm ${iso([new Date()])[0]}`),
      );
      await runFor(ticker, 2 * 60_000);
      expect(WARM_UP_MS).to.equal(150);
      expect(events).to.deepEqual([
        'tick 10:00:42.000',
        'warm 10:00:59.860',
        'tick 10:01:00.010',
        'warm 10:01:59.860',
        'tick 10:02:00.010',
      ]);
    });

    it('skips the warm-up when a slow tick ends within WARM_UP_MS of the next, and never runs two at once', async () => {
      const events: string[] = [];
      let warmUps = 0;
      const ticker = new MinuteTicker(
        () => new Date(),
        async now => {
          events.push(`tick ${iso([now])[0]}`);
          // The first ends 100 ms before the next tick is due.
          if (events.length === 1)
            await new Promise(resolve => setTimeout(resolve, 17_910));
        },
        new LogCapture().logger,
        1,
        undefined,
        async () => {
          warmUps++;
          events.push(`warm ${iso([new Date()])[0]}`);
          // Slower than a minute: the next one is not started beside it.
          await new Promise(resolve => setTimeout(resolve, 90_000));
        },
      );
      ticker.start();
      await clock.tickAsync(0);
      await clock.tickAsync(3 * 60_000 + 30_000);
      const stopped = ticker.stop();
      await clock.tickAsync(90_000);
      await stopped;
      // None before 10:01 (too late), none at 10:02:59.860 (the last still
      // under way).
      expect(events).to.deepEqual([
        'tick 10:00:42.000',
        'tick 10:01:00.010',
        'warm 10:01:59.860',
        'tick 10:02:00.010',
        'tick 10:03:00.010',
        'warm 10:03:59.860',
        'tick 10:04:00.010',
      ]);
      expect(warmUps).to.equal(2);
    });

    it('logs a failed warm-up at debug only, and ticks on time', async () => {
      const logs = new LogCapture('debug');
      const ticks: Date[] = [];
      const ticker = new MinuteTicker(
        () => new Date(),
        async now => ticks.push(now),
        logs.logger,
        1,
        undefined,
        () => Promise.reject(new Error('connection refused')),
      );
      await runFor(ticker, 60_000);
      expect(iso(ticks)).to.deepEqual(['10:00:42.000', '10:01:00.010']);
      expect(logs.find('Warming up for the next tick failed')[0]).to.match({
        level: 'debug',
        error: 'connection refused',
      });
    });
  });

  describe('reading ahead', () => {
    it("prepares each next tick READ_AHEAD_MS before its boundary, with that tick's time", async () => {
      const events: string[] = [];
      const ticker = new MinuteTicker(
        () => new Date(),
        async now => events.push(`tick ${iso([now])[0]}`),
        new LogCapture().logger,
        1,
        async tickAt =>
          events.push(
            `prepare at ${iso([new Date()])[0]} for ${iso([tickAt])[0]}`,
          ),
      );
      await runFor(ticker, 2 * 60_000);
      expect(READ_AHEAD_MS).to.equal(3000);
      expect(events).to.deepEqual([
        'tick 10:00:42.000',
        'prepare at 10:00:57.000 for 10:01:00.010',
        'tick 10:01:00.010',
        'prepare at 10:01:57.000 for 10:02:00.010',
        'tick 10:02:00.010',
      ]);
    });

    it('prepares at once when a slow tick ends within READ_AHEAD_MS of the boundary', async () => {
      const events: string[] = [];
      const ticker = new MinuteTicker(
        () => new Date(),
        async now => {
          events.push(`tick ${iso([now])[0]}`);
          if (events.length === 1)
            await new Promise(resolve => setTimeout(resolve, 17_000));
        },
        new LogCapture().logger,
        1,
        async tickAt =>
          events.push(
            `prepare at ${iso([new Date()])[0]} for ${iso([tickAt])[0]}`,
          ),
      );
      ticker.start();
      await clock.tickAsync(20_000);
      await ticker.stop();
      expect(events).to.deepEqual([
        'tick 10:00:42.000',
        'prepare at 10:00:59.001 for 10:01:00.010',
        'tick 10:01:00.010',
      ]);
    });

    it('logs a failed preparation and ticks on', async () => {
      const logs = new LogCapture();
      let ticks = 0;
      const ticker = new MinuteTicker(
        () => new Date(),
        async () => ticks++,
        logs.logger,
        1,
        async () => {
          throw new Error('database unreachable');
        },
      );
      ticker.start();
      await clock.tickAsync(60_000);
      await ticker.stop();
      expect(ticks).to.equal(2);
      expect(logs.find('Preparing the next tick failed')[0]).to.containDeep({
        level: 'warn',
        error: 'database unreachable',
      });
    });

    it('never starts a preparation while the last one is still under way', async () => {
      const started: string[] = [];
      const ticker = new MinuteTicker(
        () => new Date(),
        async () => undefined,
        new LogCapture().logger,
        1,
        async () => {
          started.push(iso([new Date()])[0]);
          // Slower than a minute: the database hangs.
          await new Promise(resolve => setTimeout(resolve, 100_000));
        },
      );
      ticker.start();
      await clock.tickAsync(3 * 60_000);
      const stopped = ticker.stop();
      await clock.tickAsync(100_000);
      await stopped;
      // 10:01:57 finds the first still under way (until 10:02:37).
      expect(started).to.deepEqual(['10:00:57.000', '10:02:57.000']);
    });

    it('stop() cancels a preparation not yet started and waits for one in flight', async () => {
      let prepared = 0;
      let finished = false;
      const ticker = new MinuteTicker(
        () => new Date(),
        async () => undefined,
        new LogCapture().logger,
        1,
        async () => {
          prepared++;
          await new Promise(resolve => setTimeout(resolve, 2000));
          finished = true;
        },
      );
      ticker.start();
      await clock.tickAsync(15_500);
      expect(prepared).to.equal(1);
      const stopped = ticker.stop();
      await clock.tickAsync(2000);
      await stopped;
      expect(finished).to.be.true();

      // 10:01:30: the next preparation is due at 10:01:57, after the stop.
      await clock.tickAsync(30_000);
      const idle = new MinuteTicker(
        () => new Date(),
        async () => undefined,
        new LogCapture().logger,
        1,
        async () => {
          prepared++;
        },
      );
      idle.start();
      await clock.tickAsync(1000);
      await idle.stop();
      await clock.tickAsync(60_000);
      expect(prepared).to.equal(1);
    });
  });
});
