import {expect} from '@loopback/testlab';
import {mkdtempSync, rmSync, writeFileSync} from 'node:fs';
import {tmpdir} from 'node:os';
import path from 'node:path';
import {planFaults} from '../chaos/chaos-plan';
import {parseChaosArgs, PROFILES} from '../chaos/chaos-profile';
import {SeededRandom} from '../chaos/seeded-random';
import {readSideEffects} from '../chaos/side-effects';

describe('chaos suite plan', () => {
  it('plans the same faults for the same seed, and others for another', () => {
    const plan = (seed: number) =>
      planFaults(PROFILES.full, 150_000, new SeededRandom(seed));
    expect(plan(42)).to.deepEqual(plan(42));
    expect(plan(42)).to.not.deepEqual(plan(43));
  });

  it('plans every fault of the profile inside the window, cuts within their bounds', () => {
    const profile = PROFILES.full;
    const faults = planFaults(profile, 150_000, new SeededRandom(7));
    const count = (kind: string) => faults.filter(f => f.kind === kind).length;
    expect(count('producer-kill')).to.equal(profile.faults.producerKills);
    expect(count('producer-kill-after-claim')).to.equal(
      profile.faults.producerKillsAfterClaim,
    );
    expect(count('consumer-kill')).to.equal(profile.faults.consumerKills);
    expect(count('broker-cut')).to.equal(profile.faults.brokerCuts);
    expect(count('database-cut')).to.equal(profile.faults.databaseCuts);
    expect(count('outcome-mark-cut')).to.equal(profile.faults.outcomeMarkCuts);
    expect(count('channel-close')).to.equal(profile.faults.channelCloses);
    expect(count('broker-stall') + count('database-stall')).to.equal(
      profile.faults.stalls,
    );
    for (const fault of faults) {
      expect(fault.atMs).to.be.within(15_000, 112_500);
      if (fault.durationMs !== undefined) {
        expect(fault.durationMs).to.be.within(5000, 20_000);
      }
    }
  });

  it('reads --full, --seed and --report and refuses anything else', () => {
    expect(parseChaosArgs([], () => 5)).to.containDeep({
      seed: 5,
      profile: {name: 'short'},
    });
    expect(
      parseChaosArgs(
        ['--full', '--seed', '123', '--report', 'r.json'],
        () => 5,
      ),
    ).to.containDeep({
      seed: 123,
      profile: {name: 'full'},
      reportFile: 'r.json',
    });
    expect(() => parseChaosArgs(['--seed', 'abc'], () => 5)).to.throw(
      /--seed needs an integer/,
    );
    expect(() => parseChaosArgs(['--fast'], () => 5)).to.throw(
      /unknown argument "--fast"/,
    );
  });

  it('reads side-effect records per run and reports malformed lines', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'chaos-effects-'));
    try {
      const file = path.join(dir, 'effects.log');
      writeFileSync(
        file,
        [
          '7 cron-2026-11-21-20-01 1 ok 1795291260.123456 4242',
          '7 cron-2026-11-21-20-01 2 ok 1795291261.000000 4243',
          '8 cron-2026-11-21-20-01 1 fail 1795291260.5 4242',
          'garbage',
          '',
        ].join('\n'),
      );
      const {byRun, malformed, total} = readSideEffects(file);
      expect(total).to.equal(3);
      expect(malformed).to.deepEqual(['garbage']);
      expect(byRun.get('7 cron-2026-11-21-20-01')).to.have.length(2);
      expect(byRun.get('8 cron-2026-11-21-20-01')![0]).to.containDeep({
        outcome: 'fail',
        attempt: 1,
        at: 1795291260500,
      });
    } finally {
      rmSync(dir, {recursive: true, force: true});
    }
  });
});
