import {Client} from 'pg';
import {hashPassword} from '../../auth/password-hasher';
import {dropDatabase} from '../../database/database-admin';
import {migrateDatabase} from '../../database/migration-runner';
import {LogCapture} from '../fixtures/log-capture';
import {createVhost, deleteVhost, TEST_VHOST} from '../fixtures/test-broker';
import {TEST_DATABASE_URL} from '../fixtures/test-database';
import type {AuthKind} from './request-arbitrary';

export const ACTOR_PASSWORD = 'fuzz-password-not-secret';
export const ACTOR_ROLES = ['admin', 'operator', 'viewer'] as const;
export type ActorRole = (typeof ACTOR_ROLES)[number];

/** Config keys that exist, so keyed paths reach more than 404. */
export const KNOWN_CONFIG_KEYS = ['fuzz.a', 'fuzz.b', 'fuzz-c'];

/**
 * A database and vhost of this run's own (the same names the mocha root
 * hooks would use), migrated, and removed by `remove()`.
 */
export async function createFuzzEnvironment(): Promise<{
  remove(): Promise<void>;
}> {
  await Promise.all([
    migrateDatabase(TEST_DATABASE_URL, new LogCapture('error').logger),
    createVhost(TEST_VHOST),
  ]);
  return {
    async remove() {
      await Promise.all([
        dropDatabase(TEST_DATABASE_URL),
        deleteVhost(TEST_VHOST),
      ]);
    },
  };
}

/** The users whose tokens the fuzzer sends; recreated if a request removed them. */
export class Actors {
  readonly ids = new Map<ActorRole, number>();
  private hash?: string;
  private readonly suffix = Math.random().toString(36).slice(2);

  constructor(private readonly client: Client) {}

  email(role: ActorRole): string {
    return `fuzz-${role}-${this.suffix}@fuzz.invalid`;
  }

  /**
   * Puts every actor back as it was: the fuzzer may legitimately delete,
   * demote or deactivate them. Returns true when anything had to change.
   */
  async restore(): Promise<boolean> {
    this.hash ??= await hashPassword(ACTOR_PASSWORD);
    let changed = false;
    for (const role of ACTOR_ROLES) {
      const {rows} = await this.client.query<{id: number; touched: boolean}>(
        `INSERT INTO app_user (id, email, name, password_hash, role, active)
         VALUES (COALESCE($1, nextval(pg_get_serial_sequence('app_user', 'id'))::int),
                 $2, $3, $4, $5, true)
         ON CONFLICT (id) DO UPDATE
           SET email = EXCLUDED.email, password_hash = EXCLUDED.password_hash,
               role = EXCLUDED.role, active = true
           WHERE (app_user.email, app_user.password_hash, app_user.role, app_user.active)
                 IS DISTINCT FROM (EXCLUDED.email, EXCLUDED.password_hash, EXCLUDED.role, true)
         RETURNING id, true AS touched`,
        [
          this.ids.get(role) ?? null,
          this.email(role),
          `Fuzz ${role}`,
          this.hash,
          role,
        ],
      );
      if (rows.length > 0) {
        this.ids.set(role, rows[0].id);
        changed = true;
      }
    }
    // A fuzzed logout, logout-all or password change revokes the actors'
    // tokens (issue 20): give them back, as the rows above.
    const ids = [...this.ids.values()];
    const revocations = await this.client.query(
      `UPDATE app_user SET tokens_valid_after = '-infinity'
        WHERE id = ANY($1) AND tokens_valid_after <> '-infinity'`,
      [ids],
    );
    const signOuts = await this.client.query(
      `DELETE FROM revoked_token WHERE user_id = ANY($1)`,
      [ids],
    );
    if ((revocations.rowCount ?? 0) + (signOuts.rowCount ?? 0) > 0) {
      changed = true;
    }
    return changed;
  }
}

const SEEDED_TABLES = [
  'report',
  'worker',
  'reminder',
  'user_group',
  'language',
  'scheduler',
  'scheduler_execution',
  'failed_task',
  'ticket',
  'notification',
];
/** Rows the API creates get ids from here on, still within the fuzzer's id range. */
const FIRST_CREATED_ID = 11;

/** Ids 1…5 of every resource (and the known config keys), whichever are missing. */
function topUpStatement(ownerId: number): string {
  const ids = 'FROM generate_series(1, 5) AS n ON CONFLICT DO NOTHING';
  return `
    INSERT INTO report (id, name, controller) SELECT n, 'Report ' || n, 'SalesReport' ${ids};
    INSERT INTO worker (id, name, command) SELECT n, 'Worker ' || n, 'sample-worker' ${ids};
    INSERT INTO reminder (id, message) SELECT n, 'Reminder ' || n ${ids};
    INSERT INTO user_group (id, name) SELECT n, 'Group ' || n ${ids};
    INSERT INTO language (id, code, name) SELECT n, 'l' || n, 'Language ' || n ${ids};
    INSERT INTO scheduler (id, description, schedule, report_id, params)
      SELECT n, 'Seeded ' || n, '0 6 * * *', 1, '{}' ${ids};
    INSERT INTO scheduler_execution (id, scheduler_id, execution_key, container_id)
      SELECT n, n, 'seed-' || n, 'fuzz' ${ids};
    INSERT INTO failed_task (id, scheduler_id, type, task_id, params_scheduler, payload,
                             failed_reason, failed_at)
      SELECT n, n, 'report', 1, '{}', '{}', 'seeded', now() ${ids};
    INSERT INTO ticket (id, title, user_id) SELECT n, 'Ticket ' || n, ${ownerId} ${ids};
    INSERT INTO notification (id, user_id, title) SELECT n, ${ownerId}, 'Note ' || n ${ids};
    INSERT INTO config (key, value)
      SELECT key, '{"seeded":true}' FROM unnest(ARRAY[${KNOWN_CONFIG_KEYS.map(k => `'${k}'`).join(', ')}]) AS key
      ON CONFLICT DO NOTHING;`;
}

/**
 * What every request may rely on: the actors, and rows 1…5 of every resource.
 * Requests delete and change them (as they may), so they are put back now and
 * then, between requests; the snapshot is retaken after any put-back.
 */
export class Fixtures {
  readonly actors: Actors;

  constructor(private readonly client: Client) {
    this.actors = new Actors(client);
  }

  async seed(): Promise<void> {
    await this.actors.restore();
    await this.restore();
    await this.client.query(
      SEEDED_TABLES.map(
        table =>
          `SELECT setval(pg_get_serial_sequence('${table}', 'id'), ${FIRST_CREATED_ID - 1});`,
      ).join('\n'),
    );
  }

  /** Puts back whatever is missing; true when anything changed. */
  async restore(): Promise<boolean> {
    const actorsChanged = await this.actors.restore();
    const owner = this.actors.ids.get('operator')!;
    const results = await this.client.query(topUpStatement(owner));
    const rows = (Array.isArray(results) ? results : [results]).reduce(
      (sum: number, result: {rowCount: number | null}) =>
        sum + (result.rowCount ?? 0),
      0,
    );
    return actorsChanged || rows > 0;
  }
}

export type Tokens = Record<AuthKind, string | undefined>;
