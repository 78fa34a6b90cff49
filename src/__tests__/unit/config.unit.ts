import {expect} from '@loopback/testlab';
import path from 'node:path';
import {
  ConfigError,
  loadConfig,
  loadReportChildConfig,
  reportChildEnv,
  requireDirectSession,
} from '../../config';

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
      amqpConnectTimeoutMs: 10_000,
      amqpPublishChannels: 4,
      amqpConfirmTimeoutMs: 60_000,
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
      cronWorkerChannels: 1,
      authUserCacheMs: 5000,
      cronLedgerDurableCommit: false,
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
      CRON_LEDGER_DURABLE_COMMIT: 'true',
      CRON_WORKER_CHANNELS: '4',
      AMQP_PUBLISH_CHANNELS: '2',
      AMQP_CONFIRM_TIMEOUT_MS: '5000',
      AUTH_USER_CACHE_MS: '0',
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
      cronLedgerDurableCommit: true,
      cronWorkerChannels: 4,
      amqpPublishChannels: 2,
      amqpConfirmTimeoutMs: 5000,
      authUserCacheMs: 0,
    });
  });

  it('reads booleans as true/false or 1/0, in any case', () => {
    const durable = (raw: string) =>
      loadConfig({CRON_LEDGER_DURABLE_COMMIT: raw}).cronLedgerDurableCommit;
    expect(['TRUE', '1', 'false', '0'].map(durable)).to.deepEqual([
      true,
      true,
      false,
      false,
    ]);
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
      /APP_MODE must be one of api, scheduler, worker, stay-alive, all/,
    ],
    ['HEALTH_PORT', '65536', /HEALTH_PORT must be an integer between 0/],
    ['HEALTH_PORT', 'health', /HEALTH_PORT must be an integer/],
    [
      'STAY_ALIVE_RECONCILE_MS',
      '60001',
      /STAY_ALIVE_RECONCILE_MS must be an integer between 100 and 60000/,
    ],
    [
      'STAY_ALIVE_RECONCILE_MS',
      '50',
      /STAY_ALIVE_RECONCILE_MS must be an integer between 100/,
    ],
    [
      'STAY_ALIVE_RESTART_DELAY_MS',
      '0',
      /STAY_ALIVE_RESTART_DELAY_MS must be an integer between 1/,
    ],
    ['STAY_ALIVE_STABLE_MS', '-1', /STAY_ALIVE_STABLE_MS must be an integer/],
    [
      'STAY_ALIVE_STOP_GRACE_MS',
      'soon',
      /STAY_ALIVE_STOP_GRACE_MS must be an integer/,
    ],
    [
      'PROCESS_NICE',
      '20',
      /PROCESS_NICE must be an integer between -20 and 19/,
    ],
    ['PROCESS_NICE', '-21', /PROCESS_NICE must be an integer between -20/],
    ['PROCESS_NICE', 'high', /PROCESS_NICE must be an integer/],
    ['PROCESS_NICE', '2.5', /PROCESS_NICE must be an integer/],
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
      'CRON_WORKER_CHANNELS',
      '0',
      /CRON_WORKER_CHANNELS must be an integer between 1 and 32/,
    ],
    [
      'CRON_WORKER_CHANNELS',
      '33',
      /CRON_WORKER_CHANNELS must be an integer between 1 and 32/,
    ],
    [
      'AMQP_PUBLISH_CHANNELS',
      '0',
      /AMQP_PUBLISH_CHANNELS must be an integer between 1 and 16/,
    ],
    [
      'AMQP_PUBLISH_CHANNELS',
      '17',
      /AMQP_PUBLISH_CHANNELS must be an integer between 1 and 16/,
    ],
    [
      'AMQP_PUBLISH_CHANNELS',
      '2.5',
      /AMQP_PUBLISH_CHANNELS must be an integer between 1 and 16/,
    ],
    [
      'AMQP_CONFIRM_TIMEOUT_MS',
      '999',
      /AMQP_CONFIRM_TIMEOUT_MS must be an integer between 1000 and 600000/,
    ],
    [
      'AMQP_CONFIRM_TIMEOUT_MS',
      'never',
      /AMQP_CONFIRM_TIMEOUT_MS must be an integer between 1000 and 600000/,
    ],
    [
      'AUTH_USER_CACHE_MS',
      '-1',
      /AUTH_USER_CACHE_MS must be an integer between 0 and 60000/,
    ],
    [
      'AUTH_USER_CACHE_MS',
      '60001',
      /AUTH_USER_CACHE_MS must be an integer between 0 and 60000/,
    ],
    [
      'AUTH_USER_CACHE_MS',
      '5s',
      /AUTH_USER_CACHE_MS must be an integer between 0 and 60000/,
    ],
    [
      'CRON_TASK_TIMEOUT_MS',
      '3600000',
      /CRON_TASK_TIMEOUT_MS must be an integer/,
    ],
    ['CRON_CATCHUP_MINUTES', '-1', /CRON_CATCHUP_MINUTES must be an integer/],
    [
      'CRON_LEDGER_DURABLE_COMMIT',
      'yes',
      /CRON_LEDGER_DURABLE_COMMIT must be true or false/,
    ],
    [
      'CRON_SWEEP_AFTER_MS',
      '10',
      /CRON_SWEEP_AFTER_MS must be an integer between 1000/,
    ],
    [
      'FAILURE_NOTICE_INTERVAL',
      'soon',
      /FAILURE_NOTICE_INTERVAL must be a duration/,
    ],
    [
      'CRON_SWEEP_BUDGET_MS',
      '60000',
      /CRON_SWEEP_BUDGET_MS must be an integer between 100 and 50000/,
    ],
    [
      'CRON_CLEANUP_BUDGET_MS',
      '0',
      /CRON_CLEANUP_BUDGET_MS must be an integer between 100/,
    ],
    [
      'DB_STATEMENT_TIMEOUT_MS',
      '0',
      /DB_STATEMENT_TIMEOUT_MS must be an integer between 100/,
    ],
    [
      'API_STATEMENT_TIMEOUT_MS',
      'soon',
      /API_STATEMENT_TIMEOUT_MS must be an integer between 100/,
    ],
    ['SMTP_URL', 'not a url', /SMTP_URL is not a valid URL/],
    [
      'SMTP_URL',
      'http://mail.example.com',
      /SMTP_URL must be a URL of the form smtp:/,
    ],
    ['MAIL_FROM', 'nobody', /MAIL_FROM must be an e-mail address/],
    ['MAIL_OUTBOX_DIR', ' ', /MAIL_OUTBOX_DIR must not be empty/],
    [
      'REPORT_INSTANT_TIMEOUT_MS',
      '10',
      /REPORT_INSTANT_TIMEOUT_MS must be an integer between 1000/,
    ],
  ];
  for (const [variable, value, message] of invalid) {
    it(`rejects ${variable}=${JSON.stringify(value)} naming the variable`, () => {
      const error = configErrorFor({[variable]: value});
      expect(error.variable).to.equal(variable);
      expect(error.message).to.match(message);
    });
  }

  it('requires JWT_SECRET in production and leaves it unset elsewhere (the installation generates one)', () => {
    const error = configErrorFor({NODE_ENV: 'production'});
    expect(error.variable).to.equal('JWT_SECRET');
    const development = loadConfig({});
    expect(development.jwt.secret).to.be.undefined();
    const production = loadConfig({
      NODE_ENV: 'production',
      JWT_SECRET: 'x'.repeat(32),
    });
    expect(production.jwt.secret).to.equal('x'.repeat(32));
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

  it('reads PROCESS_NICE: unset or empty leaves the priority alone', () => {
    expect(loadConfig({}).processNice).to.be.undefined();
    expect(loadConfig({PROCESS_NICE: ''}).processNice).to.be.undefined();
    expect(loadConfig({PROCESS_NICE: '-10'}).processNice).to.equal(-10);
    expect(loadConfig({PROCESS_NICE: '19'}).processNice).to.equal(19);
  });

  it('reads the health port and the stay-alive settings, with their defaults', () => {
    expect(loadConfig({}).healthPort).to.be.undefined();
    expect(loadConfig({HEALTH_PORT: ''}).healthPort).to.be.undefined();
    expect(loadConfig({}).stayAlive).to.deepEqual({
      reconcileMs: 15000,
      restartDelayMs: 1000,
      restartMaxDelayMs: 60000,
      stableMs: 60000,
      stopGraceMs: 10000,
      maxWorkers: 20,
      outputMaxBytes: 1048576,
    });
    const config = loadConfig({
      APP_MODE: 'stay-alive',
      HEALTH_PORT: '8081',
      STAY_ALIVE_RECONCILE_MS: '5000',
      STAY_ALIVE_RESTART_DELAY_MS: '500',
      STAY_ALIVE_RESTART_MAX_DELAY_MS: '30000',
      STAY_ALIVE_STABLE_MS: '120000',
      STAY_ALIVE_STOP_GRACE_MS: '0',
    });
    expect(config).to.containDeep({
      appMode: 'stay-alive',
      healthPort: 8081,
      stayAlive: {
        reconcileMs: 5000,
        restartDelayMs: 500,
        restartMaxDelayMs: 30000,
        stableMs: 120000,
        stopGraceMs: 0,
      },
    });
  });

  it('rejects a restart delay cap below the base delay, naming the cap', () => {
    const error = configErrorFor({
      STAY_ALIVE_RESTART_DELAY_MS: '5000',
      STAY_ALIVE_RESTART_MAX_DELAY_MS: '1000',
    });
    expect(error.variable).to.equal('STAY_ALIVE_RESTART_MAX_DELAY_MS');
    expect(error.message).to.match(/at least STAY_ALIVE_RESTART_DELAY_MS/);
    // A base delay above the default cap raises the default cap with it.
    expect(
      loadConfig({STAY_ALIVE_RESTART_DELAY_MS: '90000'}).stayAlive
        .restartMaxDelayMs,
    ).to.equal(90000);
  });

  it('resolves WORKERS_DIR against the project root', () => {
    expect(loadConfig({}).workersDir).to.match(/\/scripts\/workers$/);
    expect(loadConfig({WORKERS_DIR: '/opt/workers'}).workersDir).to.equal(
      '/opt/workers',
    );
  });

  it('reads the report settings; mail goes to files under the project when SMTP_URL is unset', () => {
    expect(loadConfig({}).reports).to.deepEqual({
      smtpUrl: undefined,
      mailFrom: 'task-scheduler@localhost',
      mailOutboxDir: path.resolve(__dirname, '../../../var/mail-outbox'),
      instantTimeoutMs: 60_000,
      maxRows: 250_000,
      maxBytes: 100 * 1024 * 1024,
      mailAttachmentMaxBytes: 10 * 1024 * 1024,
      outboxMaxAgeMs: 7 * 24 * 60 * 60 * 1000,
      outboxMaxBytes: 256 * 1024 * 1024,
      maxQueuedPerUser: 3,
      concurrency: 1,
      taskTimeoutMs: 600_000,
    });
    expect(
      loadConfig({
        SMTP_URL: 'smtps://u:p@mail.example.com:465',
        MAIL_FROM: 'reports@example.com',
        MAIL_OUTBOX_DIR: '/var/spool/reports',
        REPORT_INSTANT_TIMEOUT_MS: '5000',
        REPORT_MAX_ROWS: '1000',
        REPORT_MAX_BYTES: '2048',
        REPORT_ATTACH_MAX_BYTES: '1024',
        MAIL_OUTBOX_MAX_AGE_MS: '60000',
        MAIL_OUTBOX_MAX_BYTES: '1048576',
        REPORT_MAX_QUEUED_PER_USER: '1',
        REPORT_CONCURRENCY: '4',
        REPORT_TASK_TIMEOUT_MS: '120000',
      }).reports,
    ).to.deepEqual({
      smtpUrl: 'smtps://u:p@mail.example.com:465',
      mailFrom: 'reports@example.com',
      mailOutboxDir: '/var/spool/reports',
      instantTimeoutMs: 5000,
      maxRows: 1000,
      maxBytes: 2048,
      mailAttachmentMaxBytes: 1024,
      outboxMaxAgeMs: 60_000,
      outboxMaxBytes: 1048576,
      maxQueuedPerUser: 1,
      concurrency: 4,
      taskTimeoutMs: 120_000,
    });
    expect(() => loadConfig({REPORT_CONCURRENCY: '0'})).to.throw(
      /REPORT_CONCURRENCY/,
    );
    expect(() => loadConfig({REPORT_TASK_TIMEOUT_MS: '1800000'})).to.throw(
      /REPORT_TASK_TIMEOUT_MS/,
    );
    expect(() => loadConfig({REPORT_MAX_ROWS: '0'})).to.throw(
      /REPORT_MAX_ROWS/,
    );
    expect(() => loadConfig({TASK_OUTPUT_MAX_BYTES: '10'})).to.throw(
      /TASK_OUTPUT_MAX_BYTES/,
    );
    expect(() => loadConfig({STAY_ALIVE_MAX: '-1'})).to.throw(/STAY_ALIVE_MAX/);
  });

  it('gives report children the database, time zone, catch-up window and mail settings, never the JWT secret or broker URL', () => {
    const config = loadConfig({
      JWT_SECRET: 'x'.repeat(40),
      AMQP_URL: 'amqp://u:secret@broker:5672',
      SMTP_URL: 'smtp://mail:25',
      CRON_TZ: 'Europe/Berlin',
      CRON_CATCHUP_MINUTES: '0',
      DATABASE_POOL_MODE: 'transaction',
      APP_MODE: 'worker',
    });
    const env = reportChildEnv(config);
    expect(env).to.containDeep({
      DATABASE_URL: config.databaseUrl,
      DATABASE_POOL_MODE: 'transaction',
      CRON_TZ: 'Europe/Berlin',
      CRON_CATCHUP_MINUTES: '0',
      SMTP_URL: 'smtp://mail:25',
    });
    expect(Object.keys(env)).to.not.containEql('JWT_SECRET');
    expect(Object.keys(env)).to.not.containEql('AMQP_URL');
    expect(loadReportChildConfig(env)).to.deepEqual({
      databaseUrl: config.databaseUrl,
      databasePoolMode: 'transaction',
      dbStatementTimeoutMs: 60_000,
      timeZone: 'Europe/Berlin',
      catchUpMinutes: 0,
      reports: config.reports,
    });
  });

  it('reads the pool mode and the direct URL, refusing unknown modes', () => {
    const direct = 'postgres://postgres@db:5432/task_scheduler';
    const pooled = 'postgres://postgres@pgbouncer:6432/task_scheduler';
    expect(loadConfig({DATABASE_URL: pooled})).to.containDeep({
      databasePoolMode: 'session',
      databaseDirectUrl: pooled,
    });
    expect(
      loadConfig({
        DATABASE_URL: pooled,
        DATABASE_DIRECT_URL: direct,
        DATABASE_POOL_MODE: 'transaction',
      }),
    ).to.containDeep({
      databasePoolMode: 'transaction',
      databaseDirectUrl: direct,
    });
    expect(configErrorFor({DATABASE_POOL_MODE: 'statement'}).message).to.match(
      /DATABASE_POOL_MODE/,
    );
    expect(
      configErrorFor({DATABASE_DIRECT_URL: 'mysql://admin:hunter2@db/x'})
        .message,
    ).to.not.containEql('hunter2');
    expect(configErrorFor({CRON_SLOT_LEASE_MS: '500'}).message).to.match(
      /CRON_SLOT_LEASE_MS/,
    );
    for (const bad of ['99', '120001', '1.5', 'ten']) {
      expect(configErrorFor({AMQP_CONNECT_TIMEOUT_MS: bad}).message).to.match(
        /AMQP_CONNECT_TIMEOUT_MS/,
      );
    }
  });

  it('refuses transaction pooling without a direct URL where a session is needed', () => {
    const pooled = 'postgres://app:hunter2@pgbouncer:6432/task_scheduler';
    const direct = 'postgres://app:hunter2@db:5432/task_scheduler';
    const transaction = {
      DATABASE_URL: pooled,
      DATABASE_POOL_MODE: 'transaction',
    };
    // The stay-alive supervisor's advisory locks live in a session.
    for (const mode of ['stay-alive', 'all']) {
      for (const directUrl of [undefined, pooled]) {
        const error = configErrorFor({
          ...transaction,
          APP_MODE: mode,
          ...(directUrl ? {DATABASE_DIRECT_URL: directUrl} : {}),
        });
        expect(error.variable).to.equal('DATABASE_DIRECT_URL');
        expect(error.message).to.match(/DATABASE_POOL_MODE=transaction/);
        expect(error.message).to.not.containEql('hunter2');
      }
      expect(
        loadConfig({
          ...transaction,
          APP_MODE: mode,
          DATABASE_DIRECT_URL: direct,
        }).databaseDirectUrl,
      ).to.equal(direct);
    }
    // The other roles need no session of their own.
    for (const mode of ['api', 'scheduler', 'worker']) {
      expect(
        loadConfig({...transaction, APP_MODE: mode}).databasePoolMode,
      ).to.equal('transaction');
    }
    // Migrations take an advisory lock too (migrate.ts checks this).
    expect(() =>
      requireDirectSession(
        loadConfig({...transaction, APP_MODE: 'api'}),
        'migrate',
      ),
    ).to.throw(ConfigError, {variable: 'DATABASE_DIRECT_URL'});
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

describe('FAILURE_NOTICE_INTERVAL', () => {
  it('defaults to 15 minutes and reads a duration', () => {
    expect(loadConfig({}).failureNoticeIntervalMs).to.equal(15 * 60_000);
    expect(
      loadConfig({FAILURE_NOTICE_INTERVAL: '1h'}).failureNoticeIntervalMs,
    ).to.equal(3_600_000);
  });
});
