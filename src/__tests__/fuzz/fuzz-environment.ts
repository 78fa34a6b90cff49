import {Client} from 'pg';
import {hashPassword} from '../../auth/password-hasher';
import {dropDatabase} from '../../database/database-admin';
import {migrateDatabase} from '../../database/migration-runner';
import {LogCapture} from '../fixtures/log-capture';
import {createVhost, deleteVhost, TEST_VHOST} from '../fixtures/test-broker';
import {givenCatalog, TEST_DATABASE_URL} from '../fixtures/test-database';
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
    return changed;
  }
}

/** Rows for every resource, so ids 1…5 exist and updates reach the database. */
export async function seedData(client: Client, ownerId: number): Promise<void> {
  await givenCatalog(TEST_DATABASE_URL);
  await client.query(
    `INSERT INTO user_group (name) SELECT 'Group ' || n FROM generate_series(1, 5) n;
     INSERT INTO language (code, name) SELECT 'l' || n, 'Language ' || n FROM generate_series(1, 5) n;
     INSERT INTO scheduler (description, schedule, report_id, params)
       SELECT 'Seeded ' || n, '0 6 * * *', 1, '{}' FROM generate_series(1, 5) n;
     INSERT INTO scheduler_execution (scheduler_id, execution_key, container_id)
       SELECT 1 + n % 5, 'seed-' || n, 'fuzz' FROM generate_series(1, 5) n;
     INSERT INTO failed_task (scheduler_id, type, task_id, params_scheduler, payload, failed_reason, failed_at)
       SELECT 1 + n % 5, 'report', 1, '{}', '{}', 'seeded', now() FROM generate_series(1, 5) n;`,
  );
  await client.query(
    `INSERT INTO ticket (title, user_id)
       SELECT 'Ticket ' || n, $1 FROM generate_series(1, 5) n`,
    [ownerId],
  );
  await client.query(
    `INSERT INTO notification (user_id, title)
       SELECT $1, 'Note ' || n FROM generate_series(1, 5) n`,
    [ownerId],
  );
  for (const key of KNOWN_CONFIG_KEYS) {
    await client.query(
      `INSERT INTO config (key, value) VALUES ($1, '{"seeded":true}')`,
      [key],
    );
  }
}

export type Tokens = Record<AuthKind, string | undefined>;
