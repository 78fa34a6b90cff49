import {connectToAnyNode} from '../queue/amqp-connection';
import {Pool} from 'pg';
import type {CheckResult, ReadinessCheck} from './readiness';
import {closeQuietly} from '../queue/close-quietly';

/**
 * PostgreSQL answers `SELECT 1`. A pool of its own (one connection), so a
 * busy application pool does not make the service look down.
 */
export class PostgresCheck implements ReadinessCheck {
  readonly name = 'postgres';
  private pool?: Pool;

  constructor(
    private readonly databaseUrl: string,
    private readonly timeoutMs: number,
  ) {}

  async run(): Promise<CheckResult> {
    if (!this.pool) {
      this.pool = new Pool({
        connectionString: this.databaseUrl,
        max: 1,
        connectionTimeoutMillis: this.timeoutMs,
        idleTimeoutMillis: 30_000,
        application_name: 'task-scheduler readiness',
      });
      // An idle connection dropped by the server is reported by the next check.
      this.pool.on('error', () => undefined);
    }
    await this.pool.query('SELECT 1');
    return {status: 'up'};
  }

  /** Idempotent; a later run opens a new pool. */
  async close(): Promise<void> {
    const pool = this.pool;
    this.pool = undefined;
    await pool?.end().catch(() => undefined);
  }
}

/** RabbitMQ (any node of AMQP_URL) accepts an AMQP connection (handshake and login) for our vhost. */
export class RabbitMqCheck implements ReadinessCheck {
  readonly name = 'rabbitmq';

  constructor(
    private readonly amqpUrl: string,
    private readonly timeoutMs: number,
  ) {}

  async run(): Promise<CheckResult> {
    // Up when any node of the list takes us, as the roles' connections do.
    const {connection} = await connectToAnyNode(this.amqpUrl, {
      timeout: this.timeoutMs,
      clientProperties: {connection_name: 'task-scheduler readiness'},
    });
    await closeQuietly(connection);
    return {status: 'up'};
  }
}

/** A check that asks a running loop (producer ticks, supervisor rounds). */
export class FunctionCheck implements ReadinessCheck {
  constructor(
    readonly name: string,
    private readonly check: () => CheckResult,
  ) {}

  async run(): Promise<CheckResult> {
    return this.check();
  }
}
