import {expect} from '@loopback/testlab';
import {ConfigError, loadConfig} from '../../config';

function configErrorFor(env: Record<string, string>): ConfigError {
  try {
    loadConfig(env);
  } catch (error) {
    expect(error).to.be.instanceOf(ConfigError);
    return error as ConfigError;
  }
  throw new Error(`expected ${JSON.stringify(env)} to be rejected`);
}

describe('loadConfig', () => {
  it('uses the documented defaults when nothing is set', () => {
    const config = loadConfig({});
    expect(config).to.containDeep({
      appMode: 'all',
      port: 3000,
      host: '127.0.0.1',
      apiBasePath: '/api',
      databaseUrl: 'postgres://postgres@127.0.0.1:5432/task_scheduler',
      amqpUrl: 'amqp://guest:guest@127.0.0.1:5672',
      serviceName: 'task-scheduler',
      logLevel: 'info',
      nodeEnv: 'development',
      requestBodyLimit: '1mb',
      cronMaxRetries: 3,
      cronRetryDelayMs: 30000,
      cronRetryDelayMultiplier: 2,
      cronTimeZone: 'UTC',
      cronCatchUpMinutes: 5,
      cronSweepAfterMs: 30000,
      cronWorkerPrefetch: 1,
      cronTaskTimeoutMs: 600000,
      cronShutdownGraceMs: 30000,
    });
    expect(config.containerId).to.match(new RegExp(`-${process.pid}$`));
  });

  it('reads every variable it documents', () => {
    const config = loadConfig({
      APP_MODE: 'worker',
      PORT: '8080',
      HOST: '0.0.0.0',
      API_BASE_PATH: '/v1/api',
      DATABASE_URL: 'postgresql://u:p@db:5433/other',
      AMQP_URL: 'amqps://u:p@mq/vhost',
      SERVICE_NAME: 'svc',
      LOG_LEVEL: 'debug',
      NODE_ENV: 'development',
      REQUEST_BODY_LIMIT: '2MB',
      CRON_MAX_RETRIES: '0',
      CRON_RETRY_DELAY_MS: '1500',
      CRON_RETRY_DELAY_MULTIPLIER: '1.5',
    });
    expect(config).to.containDeep({
      appMode: 'worker',
      port: 8080,
      host: '0.0.0.0',
      apiBasePath: '/v1/api',
      databaseUrl: 'postgresql://u:p@db:5433/other',
      amqpUrl: 'amqps://u:p@mq/vhost',
      serviceName: 'svc',
      logLevel: 'debug',
      nodeEnv: 'development',
      requestBodyLimit: '2mb',
      cronMaxRetries: 0,
      cronRetryDelayMs: 1500,
      cronRetryDelayMultiplier: 1.5,
    });
  });

  const invalid: Array<[string, string, RegExp]> = [
    ['CRON_MAX_RETRIES', 'abc', /CRON_MAX_RETRIES must be an integer/],
    ['CRON_MAX_RETRIES', '2.5', /CRON_MAX_RETRIES must be an integer/],
    ['CRON_MAX_RETRIES', '-1', /CRON_MAX_RETRIES must be an integer/],
    ['CRON_RETRY_DELAY_MS', '-5', /CRON_RETRY_DELAY_MS must be an integer/],
    ['CRON_RETRY_DELAY_MS', '', /CRON_RETRY_DELAY_MS must be an integer/],
    [
      'CRON_RETRY_DELAY_MULTIPLIER',
      'fast',
      /CRON_RETRY_DELAY_MULTIPLIER must be a number/,
    ],
    [
      'CRON_RETRY_DELAY_MULTIPLIER',
      '0.5',
      /CRON_RETRY_DELAY_MULTIPLIER must be a number >= 1/,
    ],
    ['LOG_LEVEL', 'loud', /LOG_LEVEL must be one of debug, info, warn, error/],
    [
      'NODE_ENV',
      'prod',
      /NODE_ENV must be one of production, development, test/,
    ],
    [
      'APP_MODE',
      'everything',
      /APP_MODE must be one of api, scheduler, worker, all/,
    ],
    ['PORT', '70000', /PORT must be an integer between 0 and 65535/],
    ['PORT', 'http', /PORT must be an integer/],
    ['HOST', ' ', /HOST must not be empty/],
    ['API_BASE_PATH', 'api/', /API_BASE_PATH must be a path/],
    ['DATABASE_URL', 'not a url', /DATABASE_URL is not a valid URL/],
    [
      'DATABASE_URL',
      'mysql://root@127.0.0.1/db',
      /DATABASE_URL must be a URL of the form postgres:/,
    ],
    ['AMQP_URL', 'localhost:5672', /AMQP_URL must be a URL of the form amqp:/],
    ['REQUEST_BODY_LIMIT', 'lots', /REQUEST_BODY_LIMIT must be a size/],
    ['CRON_TZ', 'Mars/Olympus', /CRON_TZ must be an IANA time zone/],
    [
      'CRON_WORKER_PREFETCH',
      '0',
      /CRON_WORKER_PREFETCH must be an integer between 1/,
    ],
    [
      'CRON_TASK_TIMEOUT_MS',
      '3600000',
      /CRON_TASK_TIMEOUT_MS must be an integer/,
    ],
    ['CRON_CATCHUP_MINUTES', '-1', /CRON_CATCHUP_MINUTES must be an integer/],
    [
      'CRON_SWEEP_AFTER_MS',
      '10',
      /CRON_SWEEP_AFTER_MS must be an integer between 1000/,
    ],
  ];
  for (const [variable, value, message] of invalid) {
    it(`rejects ${variable}=${JSON.stringify(value)} naming the variable`, () => {
      const error = configErrorFor({[variable]: value});
      expect(error.variable).to.equal(variable);
      expect(error.message).to.match(message);
    });
  }

  it('requires JWT_SECRET in production and falls back to a flagged default elsewhere', () => {
    const error = configErrorFor({NODE_ENV: 'production'});
    expect(error.variable).to.equal('JWT_SECRET');
    const development = loadConfig({});
    expect(development.jwt.secretIsDefault).to.be.true();
    const production = loadConfig({
      NODE_ENV: 'production',
      JWT_SECRET: 'x'.repeat(32),
    });
    expect(production.jwt).to.containDeep({
      secretIsDefault: false,
      secret: 'x'.repeat(32),
    });
  });

  it('rejects a JWT_SECRET shorter than 32 characters without echoing it', () => {
    const error = configErrorFor({JWT_SECRET: 'short-secret'});
    expect(error.variable).to.equal('JWT_SECRET');
    expect(error.message).to.not.containEql('short-secret');
  });

  it('reads JWT_TTL as seconds or with a unit', () => {
    expect(loadConfig({}).jwt.ttlSeconds).to.equal(3600);
    expect(loadConfig({JWT_TTL: '900'}).jwt.ttlSeconds).to.equal(900);
    expect(loadConfig({JWT_TTL: '15m'}).jwt.ttlSeconds).to.equal(900);
    expect(loadConfig({JWT_TTL: '2h'}).jwt.ttlSeconds).to.equal(7200);
    expect(configErrorFor({JWT_TTL: '0'}).variable).to.equal('JWT_TTL');
    expect(configErrorFor({JWT_TTL: 'soon'}).variable).to.equal('JWT_TTL');
  });

  it('takes the first admin from ADMIN_EMAIL and ADMIN_PASSWORD together', () => {
    expect(loadConfig({}).initialAdmin).to.be.undefined();
    expect(
      loadConfig({ADMIN_EMAIL: '', ADMIN_PASSWORD: ''}).initialAdmin,
    ).to.be.undefined();
    expect(
      loadConfig({
        ADMIN_EMAIL: 'Ops@Example.com',
        ADMIN_PASSWORD: 'long-enough-1',
      }).initialAdmin,
    ).to.deepEqual({email: 'ops@example.com', password: 'long-enough-1'});
    expect(configErrorFor({ADMIN_EMAIL: 'ops@example.com'}).variable).to.equal(
      'ADMIN_PASSWORD',
    );
    const weak = configErrorFor({
      ADMIN_EMAIL: 'a@b.c',
      ADMIN_PASSWORD: 'short',
    });
    expect(weak.variable).to.equal('ADMIN_PASSWORD');
    expect(weak.message).to.not.containEql('short"');
  });

  it('resolves WORKERS_DIR against the project root', () => {
    expect(loadConfig({}).workersDir).to.match(/\/scripts\/workers$/);
    expect(loadConfig({WORKERS_DIR: '/opt/workers'}).workersDir).to.equal(
      '/opt/workers',
    );
  });

  it('never echoes a rejected URL, which may hold a password', () => {
    const error = configErrorFor({DATABASE_URL: 'mysql://admin:hunter2@db/x'});
    expect(error.message).to.not.containEql('hunter2');
  });
  describe('test-only chaos settings', () => {
    const clock = {
      CHAOS_CLOCK_SCALE: '12',
      CHAOS_CLOCK_ORIGIN: '2026-11-21T20:00:00.000Z',
    };

    it('reads the fast clock and the fault point outside production', () => {
      const config = loadConfig({
        ...clock,
        CHAOS_KILL_AFTER_CLAIM_FILE: '/tmp/chaos/kill',
      });
      expect(config.testClock).to.deepEqual({
        scale: 12,
        origin: new Date('2026-11-21T20:00:00.000Z'),
      });
      expect(config.testKillAfterClaimFile).to.equal('/tmp/chaos/kill');
      expect(loadConfig({}).testClock).to.be.undefined();
    });

    for (const variable of [
      'CHAOS_CLOCK_SCALE',
      'CHAOS_CLOCK_ORIGIN',
      'CHAOS_KILL_AFTER_CLAIM_FILE',
    ]) {
      it(`refuses ${variable} when NODE_ENV=production`, () => {
        const error = configErrorFor({
          NODE_ENV: 'production',
          JWT_SECRET: 'x'.repeat(40),
          [variable]:
            variable === 'CHAOS_KILL_AFTER_CLAIM_FILE' ? '/tmp/k' : '10',
        });
        expect(error.variable).to.equal(variable);
        expect(error.message).to.match(
          /test-only .* refused when NODE_ENV=production/,
        );
      });
    }

    it('rejects a bad scale, a bad origin, one without the other and a relative path', () => {
      expect(
        configErrorFor({...clock, CHAOS_CLOCK_SCALE: '0.5'}).variable,
      ).to.equal('CHAOS_CLOCK_SCALE');
      expect(
        configErrorFor({...clock, CHAOS_CLOCK_SCALE: 'fast'}).variable,
      ).to.equal('CHAOS_CLOCK_SCALE');
      expect(
        configErrorFor({...clock, CHAOS_CLOCK_ORIGIN: 'yesterday'}).variable,
      ).to.equal('CHAOS_CLOCK_ORIGIN');
      expect(configErrorFor({CHAOS_CLOCK_SCALE: '10'}).message).to.match(
        /CHAOS_CLOCK_ORIGIN must be set together with CHAOS_CLOCK_SCALE/,
      );
      expect(
        configErrorFor({CHAOS_KILL_AFTER_CLAIM_FILE: 'kill'}).variable,
      ).to.equal('CHAOS_KILL_AFTER_CLAIM_FILE');
    });
  });
});
