import {hostname} from 'node:os';
import {DatabaseTarget, PoolMode, POOL_MODES} from '../database/pg-pool';
import {parseBrokerUrls} from '../queue/broker-urls';
import {runsRole} from '../process/app-mode';
import {NICE_MAX, NICE_MIN} from '../process/process-priority';
import {
  BROKER_CONSUMER_TIMEOUT_MS,
  MAX_TASK_TIMEOUT_MS,
} from '../queue/consumer-timeout';
import {OutboundAllow, parseOutboundAllow} from '../outbound/address-policy';
import {QUEUE_TYPES, QueueType} from '../queue/topology';
import {
  DEFAULT_CONFIRM_TIMEOUT_MS,
  MAX_PUBLISH_CHANNELS,
} from '../queue/task-publisher';
import path from 'node:path';
import {
  ConfigError,
  Env,
  oneOf,
  integer,
  numberAtLeast,
  boolean,
  nonEmpty,
  url,
  basePath,
  bodyLimit,
  duration,
  numberBetween,
  isoInstant,
  absolutePath,
  email,
  timeZone,
  mailAddress,
  read,
  readOptional,
  commitId,
} from './parsers';

export {ConfigError};

/** The roles one process can play; `all` runs every role in one process. */
export const APP_MODES = [
  'api',
  'scheduler',
  'worker',
  'stay-alive',
  'all',
] as const;
export type AppMode = (typeof APP_MODES)[number];

export const LOG_LEVELS = ['debug', 'info', 'warn', 'error'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export const NODE_ENVS = ['production', 'development', 'test'] as const;
export type NodeEnv = (typeof NODE_ENVS)[number];

export interface AppConfig {
  appMode: AppMode;
  port: number;
  host: string;
  apiBasePath: string;
  databaseUrl: string;
  /** DATABASE_POOL_MODE: session (direct, default) or transaction (PgBouncer transaction pooling). */
  databasePoolMode: PoolMode;
  /** DATABASE_DIRECT_URL: a direct session for migrations and stay-alive locks (default DATABASE_URL). */
  databaseDirectUrl: string;
  /** One URL, or several nodes of one cluster, comma-separated. */
  amqpUrl: string;
  /**
   * AMQP_CONNECT_TIMEOUT_MS: how long a connection attempt (TCP and the
   * AMQP handshake) may take before it counts as a broker that is down.
   */
  amqpConnectTimeoutMs: number;
  /** AMQP_QUEUE_TYPE: quorum (default) or classic. */
  amqpQueueType: QueueType;
  /**
   * AMQP_PUBLISH_CHANNELS: confirm channels a producer spreads a batch of
   * task messages over (a minute's runs, a sweep's resends).
   */
  amqpPublishChannels: number;
  /**
   * AMQP_CONFIRM_TIMEOUT_MS: how long a batch of task messages waits for
   * the broker's confirms before what is unanswered counts as not published.
   */
  amqpConfirmTimeoutMs: number;
  serviceName: string;
  /**
   * PROCESS_NICE: the CPU priority (nice, -20 to 19) the process gives
   * itself at start; unset leaves it as started.
   */
  processNice?: number;
  logLevel: LogLevel;
  nodeEnv: NodeEnv;
  requestBodyLimit: string;
  /** TRUST_PROXY: behind a TLS-terminating proxy (X-Forwarded-For/-Proto honoured, HSTS sent). */
  trustProxy: boolean;
  /** CORS_ORIGINS: origins allowed to call the API from a browser; empty = same origin only. */
  corsOrigins: string[];
  cronMaxRetries: number;
  cronRetryDelayMs: number;
  cronRetryDelayMultiplier: number;
  /** Default time zone of schedules, and of the 03:00 cleanup. */
  cronTimeZone: string;
  /** Missed slots older than this many minutes are not fired (0 = current only). */
  cronCatchUpMinutes: number;
  /** Claims left unpublished this long are republished by the sweeper. */
  cronSweepAfterMs: number;
  /** Time the sweeper may spend per tick before it leaves the rest for the next. */
  cronSweepBudgetMs: number;
  /**
   * CRON_LOST_RUN_GRACE_MS: beyond the longest retry delay, how long a
   * published or retrying run may show no activity before the lost-run sweep
   * sends it again (src/producer/lost-run-sweep.ts).
   */
  cronLostRunGraceMs: number;
  /** At most one failure notice per scheduler this often; then a digest with the count. */
  failureNoticeIntervalMs: number;
  /** A producer's lease on a minute slot unfinished this long is taken over by a peer. */
  cronSlotLeaseMs: number;
  /** Time one pass of the daily cleanup may spend before it yields. */
  cronCleanupBudgetMs: number;
  /** statement_timeout of the background roles' database sessions. */
  dbStatementTimeoutMs: number;
  /** statement_timeout of the API's database sessions (requests must not hang). */
  apiStatementTimeoutMs: number;
  /** How long the API keeps the user behind a bearer token; 0 looks it up on every request. */
  authUserCacheMs: number;
  /** Messages a consumer holds unacknowledged; tasks still run one at a time. */
  cronWorkerPrefetch: number;
  /** Consumers (channels) of cron_scheduler in one worker process, each one task at a time. */
  cronWorkerChannels: number;
  /** Run-ledger marks wait for the WAL flush (slower, survives a database crash). */
  cronLedgerDurableCommit: boolean;
  /** Run time limit of a task unless its worker sets its own. */
  cronTaskTimeoutMs: number;
  /** Output of a worker or report run logged at most; the rest is dropped. */
  taskOutputMaxBytes: number;
  /** On shutdown, how long the running task may take to finish. */
  cronShutdownGraceMs: number;
  /** The environment of worker and report processes: never the service's secrets. */
  childEnv: Record<string, string>;
  /** Identifies this process in claims and logs: host name plus pid. */
  containerId: string;
  /** BUILD_COMMIT: the commit the image was built from (build_info metric), when known. */
  buildCommit?: string;
  jwt: JwtConfig;
  /** Folder holding the worker executables; commands must resolve inside it. */
  workersDir: string;
  /** First admin, created by `npm run migrate` when no admin exists. */
  initialAdmin?: {email: string; password: string};
  reports: ReportConfig;
  httpTasks: HttpTaskConfig;
  /** Port of the separate /health + /ready server (any mode); unset = none. */
  healthPort?: number;
  stayAlive: StayAliveConfig;
  /** Test-only (chaos suite): the producer's clock runs faster than real time. */
  testClock?: TestClockConfig;
  /**
   * Test-only fault point (chaos suite): when this file exists after a claim,
   * the producer deletes it and SIGKILLs itself before publishing.
   */
  testKillAfterClaimFile?: string;
}

/** What HTTP tasks (and every other outbound request) need. */
export interface HttpTaskConfig {
  /** OUTBOUND_ALLOW: private addresses, ranges or host names the SSRF guard lets through. */
  outboundAllow: OutboundAllow;
  /** HTTP_TASK_CONCURRENCY: HTTP tasks one consumer process runs at once, beside its cron tasks. */
  concurrency: number;
}

/** What report generation and delivery need; also all a report child reads. */
export interface ReportConfig {
  /** smtp(s)://user:pass@host:port; unset = write .eml files to `mailOutboxDir`. */
  smtpUrl?: string;
  mailFrom: string;
  mailOutboxDir: string;
  /** How long POST /reports/generate may run an instant report. */
  instantTimeoutMs: number;
  /** REPORT_MAX_ROWS: a report with more rows fails with a clear error. */
  maxRows: number;
  /** REPORT_MAX_BYTES: a rendered file larger than this fails likewise. */
  maxBytes: number;
  /** REPORT_ATTACH_MAX_BYTES: larger files are not attached; a notice is sent. */
  mailAttachmentMaxBytes: number;
  /** MAIL_OUTBOX_MAX_AGE: outbox files older than this (ms) are deleted. */
  outboxMaxAgeMs: number;
  /** MAIL_OUTBOX_MAX_BYTES: the oldest outbox files go until it holds no more. */
  outboxMaxBytes: number;
  /** REPORT_MAX_QUEUED_PER_USER: queued reports one user may have waiting at once. */
  maxQueuedPerUser: number;
  /** REPORT_CONCURRENCY: report tasks one consumer process runs at once, beside its cron tasks. */
  concurrency: number;
  /** REPORT_TASK_TIMEOUT_MS: run time limit of one attempt of a report task. */
  taskTimeoutMs: number;
}

export interface StayAliveConfig {
  /** How often the supervisor compares its children with the database. */
  reconcileMs: number;
  /** Delay before the first restart of a crashed worker; doubles per crash. */
  restartDelayMs: number;
  /** The restart delay never grows beyond this. */
  restartMaxDelayMs: number;
  /** A worker that ran this long before exiting restarts after the base delay again. */
  stableMs: number;
  /** After SIGTERM, how long a worker gets before SIGKILL. */
  stopGraceMs: number;
  /** STAY_ALIVE_MAX: stay-alive schedulers the whole installation may have. */
  maxWorkers: number;
  /** TASK_OUTPUT_MAX_BYTES: output logged per start of a worker. */
  outputMaxBytes: number;
}

/** Simulated time = origin + (real time - origin) * scale. */
export interface TestClockConfig {
  /** Real instant where simulated and real time meet; shared by all producers. */
  origin: Date;
  scale: number;
}

export interface JwtConfig {
  /** JWT_SECRET; unset: the installation's generated secret from PostgreSQL. */
  secret?: string;
  ttlSeconds: number;
  issuer: string;
  audience: string;
}

/** Project root (the folder holding package.json), whether run from src or dist. */
export const PROJECT_ROOT = path.resolve(__dirname, '../..');

const MIN_SECRET_LENGTH = 32;
export const MIN_PASSWORD_LENGTH = 12;

/**
 * Settings that only a test may use. They make the service lie about time or
 * kill itself, so a production process refuses to start with any of them.
 */
const TEST_ONLY_VARIABLES = [
  'CHAOS_CLOCK_SCALE',
  'CHAOS_CLOCK_ORIGIN',
  'CHAOS_KILL_AFTER_CLAIM_FILE',
] as const;

function refuseTestOnlyInProduction(env: Env, nodeEnv: NodeEnv): void {
  if (nodeEnv !== 'production') return;
  for (const name of TEST_ONLY_VARIABLES) {
    if (env[name] !== undefined && env[name] !== '') {
      throw new ConfigError(
        name,
        'is a test-only setting (chaos suite) and is refused when NODE_ENV=production',
      );
    }
  }
}

function readTestClock(env: Env): TestClockConfig | undefined {
  const scale = readOptional(env, 'CHAOS_CLOCK_SCALE', numberBetween(1, 1000));
  const origin = readOptional(env, 'CHAOS_CLOCK_ORIGIN', isoInstant);
  if (scale === undefined && origin === undefined) return undefined;
  if (scale === undefined || origin === undefined) {
    throw new ConfigError(
      scale === undefined ? 'CHAOS_CLOCK_SCALE' : 'CHAOS_CLOCK_ORIGIN',
      'must be set together with ' +
        (scale === undefined ? 'CHAOS_CLOCK_ORIGIN' : 'CHAOS_CLOCK_SCALE'),
    );
  }
  return {scale, origin};
}

function secret(raw: string, name: string): string {
  if (raw.length < MIN_SECRET_LENGTH) {
    throw new ConfigError(
      name,
      `must be at least ${MIN_SECRET_LENGTH} characters long`,
    );
  }
  return raw;
}

function readJwt(env: Env, nodeEnv: NodeEnv): JwtConfig {
  const given = readOptional(env, 'JWT_SECRET', secret);
  if (given === undefined && nodeEnv === 'production') {
    throw new ConfigError(
      'JWT_SECRET',
      `is required when NODE_ENV=production (at least ${MIN_SECRET_LENGTH} characters)`,
    );
  }
  return {
    ...(given !== undefined ? {secret: given} : {}),
    ttlSeconds: read<number>(env, 'JWT_TTL', 3600, duration),
    issuer: read<string>(env, 'JWT_ISSUER', 'task-scheduler', nonEmpty),
    audience: read<string>(env, 'JWT_AUDIENCE', 'task-scheduler-api', nonEmpty),
  };
}

function readInitialAdmin(env: Env): AppConfig['initialAdmin'] {
  const adminEmail = readOptional(env, 'ADMIN_EMAIL', email);
  const password = readOptional(env, 'ADMIN_PASSWORD', adminPassword);
  if ((adminEmail === undefined) !== (password === undefined)) {
    throw new ConfigError(
      adminEmail === undefined ? 'ADMIN_EMAIL' : 'ADMIN_PASSWORD',
      'must be set together with ' +
        (adminEmail === undefined ? 'ADMIN_PASSWORD' : 'ADMIN_EMAIL'),
    );
  }
  return adminEmail && password ? {email: adminEmail, password} : undefined;
}

/** CORS_ORIGINS: comma-separated origins (scheme://host[:port]), each exact. */
function corsOrigins(raw: string, name: string): string[] {
  const origins = raw
    .split(',')
    .map(item => item.trim())
    .filter(item => item !== '');
  for (const origin of origins) {
    let parsed: URL | undefined;
    try {
      parsed = new URL(origin);
    } catch {
      parsed = undefined;
    }
    if (
      !parsed ||
      !['http:', 'https:'].includes(parsed.protocol) ||
      parsed.origin !== origin
    ) {
      throw new ConfigError(
        name,
        `must be comma-separated origins such as https://console.example.com (got "${origin.slice(0, 100)}")`,
      );
    }
  }
  return origins;
}

/** Passwords are never echoed. */
function adminPassword(raw: string, name: string): string {
  if (raw.length < MIN_PASSWORD_LENGTH) {
    throw new ConfigError(
      name,
      `must be at least ${MIN_PASSWORD_LENGTH} characters long`,
    );
  }
  return raw;
}

const MIB = 1024 * 1024;

function outboundAllow(raw: string, name: string): OutboundAllow {
  try {
    return parseOutboundAllow(raw);
  } catch (error) {
    throw new ConfigError(
      name,
      `must list addresses, CIDR ranges or host names, comma-separated: ${(error as Error).message}`,
    );
  }
}

function readHttpTasks(env: Env): HttpTaskConfig {
  return {
    outboundAllow: read(
      env,
      'OUTBOUND_ALLOW',
      parseOutboundAllow(''),
      outboundAllow,
    ),
    concurrency: read(env, 'HTTP_TASK_CONCURRENCY', 64, integer(1, 256)),
  };
}

function readReports(env: Env): ReportConfig {
  return {
    smtpUrl: readOptional(env, 'SMTP_URL', url(['smtp:', 'smtps:'])),
    mailFrom: read(env, 'MAIL_FROM', 'task-scheduler@localhost', mailAddress),
    mailOutboxDir: path.resolve(
      PROJECT_ROOT,
      read<string>(env, 'MAIL_OUTBOX_DIR', 'var/mail-outbox', nonEmpty),
    ),
    instantTimeoutMs: read(
      env,
      'REPORT_INSTANT_TIMEOUT_MS',
      60_000,
      integer(1000, 10 * 60 * 1000),
    ),
    maxRows: read(env, 'REPORT_MAX_ROWS', 250_000, integer(1, 10_000_000)),
    maxBytes: read(
      env,
      'REPORT_MAX_BYTES',
      100 * MIB,
      integer(1024, 10 * 1024 * MIB),
    ),
    mailAttachmentMaxBytes: read(
      env,
      'REPORT_ATTACH_MAX_BYTES',
      10 * MIB,
      integer(1024, 1024 * MIB),
    ),
    outboxMaxAgeMs: read(
      env,
      'MAIL_OUTBOX_MAX_AGE_MS',
      7 * 24 * 60 * 60 * 1000,
      integer(60_000, 365 * 24 * 60 * 60 * 1000),
    ),
    outboxMaxBytes: read(
      env,
      'MAIL_OUTBOX_MAX_BYTES',
      256 * MIB,
      integer(MIB, 100 * 1024 * MIB),
    ),
    maxQueuedPerUser: read(
      env,
      'REPORT_MAX_QUEUED_PER_USER',
      3,
      integer(1, 1000),
    ),
    concurrency: read(env, 'REPORT_CONCURRENCY', 1, integer(1, 16)),
    // Below RabbitMQ's 30-minute consumer timeout, as CRON_TASK_TIMEOUT_MS.
    taskTimeoutMs: read(
      env,
      'REPORT_TASK_TIMEOUT_MS',
      600_000,
      integer(1000, MAX_TASK_TIMEOUT_MS),
    ),
  };
}

/** The report limits a report child must apply too, as environment variables. */
function reportLimitEnv(reports: ReportConfig): Record<string, string> {
  return {
    REPORT_MAX_ROWS: String(reports.maxRows),
    REPORT_MAX_BYTES: String(reports.maxBytes),
    REPORT_ATTACH_MAX_BYTES: String(reports.mailAttachmentMaxBytes),
    MAIL_OUTBOX_MAX_AGE_MS: String(reports.outboxMaxAgeMs),
    MAIL_OUTBOX_MAX_BYTES: String(reports.outboxMaxBytes),
  };
}

function readPoolMode(env: Env): PoolMode {
  return read(env, 'DATABASE_POOL_MODE', 'session', oneOf(POOL_MODES));
}

/** Where the pooled connections of a role go, and how they may be used. */
export function databaseTarget(
  config: Pick<AppConfig, 'databaseUrl' | 'databasePoolMode'>,
): DatabaseTarget {
  return {url: config.databaseUrl, poolMode: config.databasePoolMode};
}

/**
 * Session advisory locks (migrations, the stay-alive supervisor) cannot go
 * through a transaction pooler: the lock would stay on a server session the
 * pooler hands to other clients. Behind one, DATABASE_DIRECT_URL must name
 * the server itself; the URLs are never echoed (they may hold passwords).
 */
export function requireDirectSession(
  config: Pick<
    AppConfig,
    'databasePoolMode' | 'databaseUrl' | 'databaseDirectUrl'
  >,
  who: string,
): void {
  if (
    config.databasePoolMode === 'transaction' &&
    config.databaseDirectUrl === config.databaseUrl
  ) {
    throw new ConfigError(
      'DATABASE_DIRECT_URL',
      `must name a direct PostgreSQL connection, not the pooler of DATABASE_URL, when DATABASE_POOL_MODE=transaction: ${who} holds session advisory locks`,
    );
  }
}

function readDatabaseUrl(env: Env): string {
  return read(
    env,
    'DATABASE_URL',
    'postgres://postgres@127.0.0.1:5432/task_scheduler',
    url(['postgres:', 'postgresql:']),
  );
}

/** The configuration of a report child process: reports only, no secrets it does not use. */
/** The largest DB_STATEMENT_TIMEOUT_MS any process may have. */
export const MAX_DB_STATEMENT_TIMEOUT_MS = 60 * 60 * 1000;

function readDbStatementTimeout(env: Env): number {
  return read(
    env,
    'DB_STATEMENT_TIMEOUT_MS',
    60_000,
    integer(100, MAX_DB_STATEMENT_TIMEOUT_MS),
  );
}

export function loadReportChildConfig(env: Env = process.env): {
  databaseUrl: string;
  databasePoolMode: PoolMode;
  dbStatementTimeoutMs: number;
  /** CRON_TZ: the zone of template variables and date-only params. */
  timeZone: string;
  /** CRON_CATCHUP_MINUTES: the inventory report's next run of a one-time scheduler. */
  catchUpMinutes: number;
  reports: ReportConfig;
} {
  return {
    databaseUrl: readDatabaseUrl(env),
    databasePoolMode: readPoolMode(env),
    dbStatementTimeoutMs: readDbStatementTimeout(env),
    timeZone: read(env, 'CRON_TZ', 'UTC', timeZone),
    catchUpMinutes: readCatchUpMinutes(env),
    reports: readReports(env),
  };
}

/**
 * The environment a report child receives: the common child variables plus
 * what reports read (database, time zone, mail). Never JWT or broker secrets.
 */
export function reportChildEnv(config: AppConfig): Record<string, string> {
  const {reports} = config;
  return {
    ...config.childEnv,
    DATABASE_URL: config.databaseUrl,
    DATABASE_POOL_MODE: config.databasePoolMode,
    DB_STATEMENT_TIMEOUT_MS: String(config.dbStatementTimeoutMs),
    CRON_TZ: config.cronTimeZone,
    CRON_CATCHUP_MINUTES: String(config.cronCatchUpMinutes),
    MAIL_FROM: reports.mailFrom,
    MAIL_OUTBOX_DIR: reports.mailOutboxDir,
    ...reportLimitEnv(reports),
    ...(reports.smtpUrl ? {SMTP_URL: reports.smtpUrl} : {}),
  };
}

function readCatchUpMinutes(env: Env): number {
  return read(env, 'CRON_CATCHUP_MINUTES', 5, integer(0, 1440));
}

function readTaskOutputMaxBytes(env: Env): number {
  return read(
    env,
    'TASK_OUTPUT_MAX_BYTES',
    1024 * 1024,
    integer(1024, 256 * 1024 * 1024),
  );
}

function readStayAlive(env: Env): StayAliveConfig {
  const restartDelayMs = read(
    env,
    'STAY_ALIVE_RESTART_DELAY_MS',
    1000,
    integer(1, 60 * 60 * 1000),
  );
  const restartMaxDelayMs = read(
    env,
    'STAY_ALIVE_RESTART_MAX_DELAY_MS',
    Math.max(60_000, restartDelayMs),
    integer(1, 24 * 60 * 60 * 1000),
  );
  if (restartMaxDelayMs < restartDelayMs) {
    throw new ConfigError(
      'STAY_ALIVE_RESTART_MAX_DELAY_MS',
      `must be at least STAY_ALIVE_RESTART_DELAY_MS (${restartDelayMs})`,
    );
  }
  return {
    // The issue promises changes within a minute, so no slower than that.
    reconcileMs: read(
      env,
      'STAY_ALIVE_RECONCILE_MS',
      15_000,
      integer(100, 60_000),
    ),
    restartDelayMs,
    restartMaxDelayMs,
    stableMs: read(
      env,
      'STAY_ALIVE_STABLE_MS',
      60_000,
      integer(0, 24 * 60 * 60 * 1000),
    ),
    stopGraceMs: read(
      env,
      'STAY_ALIVE_STOP_GRACE_MS',
      10_000,
      integer(0, 10 * 60 * 1000),
    ),
    maxWorkers: read(env, 'STAY_ALIVE_MAX', 20, integer(0, 1000)),
    outputMaxBytes: readTaskOutputMaxBytes(env),
  };
}

/**
 * Reads and validates the whole configuration. This is the only module that
 * touches `process.env`; everything else receives an `AppConfig`.
 */
export function loadConfig(env: Env = process.env): AppConfig {
  const config = readConfig(env);
  if (runsRole(config.appMode, 'stay-alive')) {
    requireDirectSession(config, 'the stay-alive supervisor');
  }
  return config;
}

function readConfig(env: Env): AppConfig {
  // Unset means development, as in Express; main() warns loudly about it and
  // the container image sets production.
  const nodeEnv = read(env, 'NODE_ENV', 'development', oneOf(NODE_ENVS));
  refuseTestOnlyInProduction(env, nodeEnv);
  return {
    appMode: read(env, 'APP_MODE', 'all', oneOf(APP_MODES)),
    port: read(env, 'PORT', 3000, integer(0, 65535)),
    host: read(env, 'HOST', '127.0.0.1', nonEmpty),
    apiBasePath: read(env, 'API_BASE_PATH', '/api', basePath),
    databaseUrl: readDatabaseUrl(env),
    databasePoolMode: readPoolMode(env),
    // Session-bound work (migrations, stay-alive locks) cannot go through a
    // transaction pooler: it gets a direct connection when one is named.
    databaseDirectUrl: read(
      env,
      'DATABASE_DIRECT_URL',
      readDatabaseUrl(env),
      url(['postgres:', 'postgresql:']),
    ),
    // One URL, or the nodes of one cluster, comma-separated.
    amqpUrl: read(
      env,
      'AMQP_URL',
      'amqp://guest:guest@127.0.0.1:5672',
      (raw, name) => (parseBrokerUrls(raw, name), raw),
    ),
    amqpConnectTimeoutMs: read(
      env,
      'AMQP_CONNECT_TIMEOUT_MS',
      10_000,
      integer(100, 120_000),
    ),
    amqpQueueType: read(env, 'AMQP_QUEUE_TYPE', 'quorum', oneOf(QUEUE_TYPES)),
    amqpPublishChannels: read(
      env,
      'AMQP_PUBLISH_CHANNELS',
      4,
      integer(1, MAX_PUBLISH_CHANNELS),
    ),
    amqpConfirmTimeoutMs: read(
      env,
      'AMQP_CONFIRM_TIMEOUT_MS',
      DEFAULT_CONFIRM_TIMEOUT_MS,
      integer(1_000, 600_000),
    ),
    serviceName: read(env, 'SERVICE_NAME', 'task-scheduler', nonEmpty),
    processNice: readOptional(env, 'PROCESS_NICE', integer(NICE_MIN, NICE_MAX)),
    logLevel: read(env, 'LOG_LEVEL', 'info', oneOf(LOG_LEVELS)),
    nodeEnv,
    requestBodyLimit: read(env, 'REQUEST_BODY_LIMIT', '1mb', bodyLimit),
    trustProxy: read(env, 'TRUST_PROXY', false, boolean),
    corsOrigins: read(env, 'CORS_ORIGINS', [] as string[], corsOrigins),
    cronMaxRetries: read(env, 'CRON_MAX_RETRIES', 3, integer(0, 100)),
    cronRetryDelayMs: read(
      env,
      'CRON_RETRY_DELAY_MS',
      30000,
      integer(1, 24 * 60 * 60 * 1000),
    ),
    cronRetryDelayMultiplier: read(
      env,
      'CRON_RETRY_DELAY_MULTIPLIER',
      2.0,
      // Below 1 the delay would shrink between retries instead of growing.
      numberAtLeast(1),
    ),
    cronTimeZone: read(env, 'CRON_TZ', 'UTC', timeZone),
    cronCatchUpMinutes: readCatchUpMinutes(env),
    cronSweepAfterMs: read(
      env,
      'CRON_SWEEP_AFTER_MS',
      30000,
      integer(1000, 24 * 60 * 60 * 1000),
    ),
    failureNoticeIntervalMs:
      read(env, 'FAILURE_NOTICE_INTERVAL', 900, duration) * 1000,
    cronSweepBudgetMs: read(
      env,
      'CRON_SWEEP_BUDGET_MS',
      10_000,
      // Within a minute: the next tick must not wait for the sweep.
      integer(100, 50_000),
    ),
    cronLostRunGraceMs: read(
      env,
      'CRON_LOST_RUN_GRACE_MS',
      // The longest a delivery stays unacknowledged before the broker takes it back.
      BROKER_CONSUMER_TIMEOUT_MS,
      // From a second (tests) to a week.
      integer(1000, 7 * 24 * 60 * 60 * 1000),
    ),
    cronSlotLeaseMs: read(
      env,
      'CRON_SLOT_LEASE_MS',
      15_000,
      // Under a minute: a dead holder's slot must be taken over before the next.
      integer(1000, 55_000),
    ),
    cronCleanupBudgetMs: read(
      env,
      'CRON_CLEANUP_BUDGET_MS',
      30_000,
      integer(100, 10 * 60 * 1000),
    ),
    dbStatementTimeoutMs: readDbStatementTimeout(env),
    apiStatementTimeoutMs: read(
      env,
      'API_STATEMENT_TIMEOUT_MS',
      10_000,
      integer(100, 10 * 60 * 1000),
    ),
    authUserCacheMs: read(env, 'AUTH_USER_CACHE_MS', 5000, integer(0, 60_000)),
    cronWorkerPrefetch: read(env, 'CRON_WORKER_PREFETCH', 1, integer(1, 1000)),
    cronWorkerChannels: read(env, 'CRON_WORKER_CHANNELS', 1, integer(1, 32)),
    // Off: ledger marks commit without waiting for the WAL flush (docs/tasks.md).
    cronLedgerDurableCommit: read(
      env,
      'CRON_LEDGER_DURABLE_COMMIT',
      false,
      boolean,
    ),
    // Below RabbitMQ's 30-minute consumer timeout, which would close the channel.
    cronTaskTimeoutMs: read(
      env,
      'CRON_TASK_TIMEOUT_MS',
      600_000,
      integer(100, MAX_TASK_TIMEOUT_MS),
    ),
    taskOutputMaxBytes: readTaskOutputMaxBytes(env),
    cronShutdownGraceMs: read(
      env,
      'CRON_SHUTDOWN_GRACE_MS',
      30_000,
      integer(0, 10 * 60 * 1000),
    ),
    childEnv: Object.fromEntries(
      ['PATH', 'HOME', 'LANG', 'TZ', 'NODE_ENV']
        .filter(name => env[name] !== undefined)
        .map(name => [name, env[name]!]),
    ),
    containerId: `${hostname()}-${process.pid}`,
    buildCommit: readOptional(env, 'BUILD_COMMIT', commitId),
    jwt: readJwt(env, nodeEnv),
    workersDir: path.resolve(
      PROJECT_ROOT,
      read<string>(env, 'WORKERS_DIR', 'scripts/workers', nonEmpty),
    ),
    initialAdmin: readInitialAdmin(env),
    reports: readReports(env),
    httpTasks: readHttpTasks(env),
    healthPort: readOptional(env, 'HEALTH_PORT', integer(0, 65535)),
    stayAlive: readStayAlive(env),
    testClock: readTestClock(env),
    testKillAfterClaimFile: readOptional(
      env,
      'CHAOS_KILL_AFTER_CLAIM_FILE',
      absolutePath,
    ),
  };
}
