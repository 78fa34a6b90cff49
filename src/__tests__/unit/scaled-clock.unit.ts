import {expect, sinon} from '@loopback/testlab';
import {killAfterClaimFaultPoint} from '../../producer/fault-point';
import {MinuteTicker} from '../../producer/minute-ticker';
import {scaledClock} from '../../producer/scaled-clock';
import {LogCapture} from '../fixtures/log-capture';
import {existsSync, mkdtempSync, rmSync, writeFileSync} from 'node:fs';
import {tmpdir} from 'node:os';
import path from 'node:path';

describe('scaledClock', () => {
  const origin = new Date('2026-11-21T10:00:00.000Z');

  it('runs `scale` times faster than real time from the origin', () => {
    let real = origin.getTime();
    const clock = scaledClock({origin, scale: 60}, () => real);
    expect(clock().toISOString()).to.equal('2026-11-21T10:00:00.000Z');
    real += 1000;
    expect(clock().toISOString()).to.equal('2026-11-21T10:01:00.000Z');
    real += 30_000;
    expect(clock().toISOString()).to.equal('2026-11-21T10:31:00.000Z');
  });

  it('gives every process with the same origin and scale the same time', () => {
    const real = origin.getTime() + 12_345;
    const first = scaledClock({origin, scale: 12}, () => real);
    const restarted = scaledClock({origin, scale: 12}, () => real);
    expect(first().getTime()).to.equal(restarted().getTime());
  });
});

describe('MinuteTicker with a fast clock', () => {
  let timers: sinon.SinonFakeTimers;
  beforeEach(() => {
    timers = sinon.useFakeTimers(new Date('2026-11-21T10:00:30.000Z'));
  });
  afterEach(() => timers.restore());

  it('ticks once per simulated minute, waiting real time divided by the rate', async () => {
    const origin = new Date();
    const clock = scaledClock({origin, scale: 10});
    const ticks: string[] = [];
    const ticker = new MinuteTicker(
      clock,
      async now => ticks.push(now.toISOString().slice(11, 19)),
      new LogCapture().logger,
      10,
    );
    ticker.start();
    // 30 real seconds = 5 simulated minutes.
    await timers.tickAsync(30_000);
    await ticker.stop();
    expect(ticks).to.deepEqual([
      '10:00:30',
      '10:01:00',
      '10:02:00',
      '10:03:00',
      '10:04:00',
      '10:05:00',
    ]);
  });
});

describe('killAfterClaimFaultPoint', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'fault-point-'));
  });
  afterEach(() => rmSync(dir, {recursive: true, force: true}));

  it('does nothing without a trigger file or without claims', () => {
    const trigger = path.join(dir, 'kill');
    const kill = sinon.spy();
    const faultPoint = killAfterClaimFaultPoint(trigger, kill);
    faultPoint(5);
    writeFileSync(trigger, '');
    faultPoint(0);
    expect(kill.called).to.be.false();
    expect(existsSync(trigger)).to.be.true();
  });

  it('consumes the trigger and kills once after a claim', () => {
    const trigger = path.join(dir, 'kill');
    writeFileSync(trigger, '');
    const kill = sinon.spy();
    const faultPoint = killAfterClaimFaultPoint(trigger, kill);
    faultPoint(3);
    faultPoint(3);
    expect(kill.calledOnce).to.be.true();
    expect(existsSync(trigger)).to.be.false();
  });
});
