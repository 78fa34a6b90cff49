import {expect} from '@loopback/testlab';
import yaml from 'js-yaml';
import {readFileSync} from 'node:fs';
import path from 'node:path';
import {loadConfig, PROJECT_ROOT} from '../../config';
import {KILL_GRACE_MS} from '../../consumer/consumer.observer';
import {shutdownDeadlineMs} from '../../process/shutdown-deadline';

interface ComposeApp {
  stop_grace_period?: string;
  environment?: Record<string, string>;
}

/** A Compose duration such as `50s`, `1m30s` or `500ms`, in milliseconds. */
function composeDurationMs(text: string): number {
  const units: Record<string, number> = {
    ms: 1,
    s: 1000,
    m: 60_000,
    h: 3_600_000,
  };
  let total = 0;
  for (const [, value, unit] of text.matchAll(/(\d+)(ms|s|m|h)/g)) {
    total += Number(value) * units[unit];
  }
  return total;
}

describe('shutdown deadline', () => {
  it('leaves the running task its whole grace, the kill grace and time to close', () => {
    for (const grace of [0, 30_000, 600_000]) {
      expect(
        shutdownDeadlineMs({cronShutdownGraceMs: grace}),
      ).to.be.greaterThanOrEqual(grace + KILL_GRACE_MS + 1000);
    }
  });

  it('follows CRON_SHUTDOWN_GRACE_MS (the default 30 s no longer outlives a 15 s exit)', () => {
    const config = loadConfig({CRON_SHUTDOWN_GRACE_MS: '30000'});
    expect(shutdownDeadlineMs(config)).to.be.above(30_000 + KILL_GRACE_MS);
  });

  it('docker-compose waits at least as long as a worker process may take to stop', () => {
    const compose = yaml.load(
      readFileSync(path.join(PROJECT_ROOT, 'docker-compose.yml'), 'utf8'),
    ) as {services: Record<string, ComposeApp>};
    const worker = compose.services.worker;
    const grace = Number(worker.environment?.CRON_SHUTDOWN_GRACE_MS);
    expect(grace).to.be.above(0);
    expect(
      composeDurationMs(worker.stop_grace_period ?? '10s'),
    ).to.be.greaterThanOrEqual(
      shutdownDeadlineMs({cronShutdownGraceMs: grace}),
    );
  });
});
