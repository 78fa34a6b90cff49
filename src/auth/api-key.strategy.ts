import {AuthenticationStrategy} from '@loopback/authentication';
import {BindingScope, inject, injectable} from '@loopback/core';
import {HttpErrors, Request} from '@loopback/rest';
import {securityId} from '@loopback/security';
import {AuthBindings} from '../keys';
import {recordRefusedApiKey} from './api-key-refusals';
import type {UserRepository} from '../crud/repositories';
import {repositorySql} from '../database/repository-sql';
import {
  API_KEY_PATTERN,
  API_KEY_PREFIX,
  apiKeyHash,
  LAST_USED_INTERVAL_MS,
  lowerRole,
} from './api-key';
import type {CurrentUser} from './current-user';
import type {Role} from '../models/user-role';

// The scheme is case-insensitive (RFC 7235); the key's own prefix is not.
const BEARER_KEY = /^[Bb][Ee][Aa][Rr][Ee][Rr] +(tsk_\S*)$/;

interface KeyRow {
  key_id: number;
  key_role: Role;
  last_used_at: Date | null;
  id: number;
  email: string;
  name: string;
  role: Role;
  group_id: number | null;
}

/**
 * `Authorization: Bearer tsk_…`: an API key that is not revoked or expired,
 * of an active user. It acts with the lower of its own role and its owner's
 * current one, so a demoted or deactivated owner's keys shrink or stop at
 * once. Anything but a `tsk_` bearer is left to the next strategy.
 */
// Nothing per request: one instance serves every request.
@injectable({scope: BindingScope.SINGLETON})
export class ApiKeyStrategy implements AuthenticationStrategy {
  name = 'api-key';

  constructor(
    @inject('repositories.UserRepository')
    private readonly users: UserRepository,
    @inject(AuthBindings.CLOCK, {optional: true})
    private readonly clock?: () => Date,
  ) {}

  async authenticate(request: Request): Promise<CurrentUser | undefined> {
    const match = BEARER_KEY.exec(request.headers.authorization?.trim() ?? '');
    if (!match) return undefined;
    const key = match[1];
    const sql = repositorySql(this.users);
    const rows = API_KEY_PATTERN.test(key)
      ? ((await sql(
          `SELECT k.id AS key_id, k.role AS key_role, k.last_used_at,
                  u.id, u.email, u.name, u.role, u.group_id
             FROM api_key k JOIN app_user u ON u.id = k.user_id
            WHERE k.key_hash = $1 AND k.revoked_at IS NULL
              AND k.expires_at > now() AND u.active`,
          [apiKeyHash(key)],
        )) as KeyRow[])
      : [];
    if (rows.length === 0) {
      // Only the start of what was presented: never a whole key. Bounded:
      // one audit event per prefix per minute, the rest counted.
      await recordRefusedApiKey(
        sql,
        key.slice(0, API_KEY_PREFIX.length + 4),
        this.clock?.() ?? new Date(),
      );
      throw new HttpErrors.Unauthorized('Invalid, expired or revoked API key');
    }
    const row = rows[0];
    if (
      !row.last_used_at ||
      Date.now() - new Date(row.last_used_at).getTime() >= LAST_USED_INTERVAL_MS
    ) {
      // Guarded in SQL too: concurrent requests and replicas write once a minute.
      await sql(
        `UPDATE api_key SET last_used_at = now()
          WHERE id = $1 AND (last_used_at IS NULL OR last_used_at <= now() - interval '1 minute')`,
        [row.key_id],
      );
    }
    return {
      [securityId]: String(row.id),
      id: row.id,
      email: row.email,
      name: row.name,
      role: lowerRole(row.key_role, row.role),
      group_id: row.group_id,
      apiKeyId: row.key_id,
    };
  }
}
