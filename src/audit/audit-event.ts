import {currentRequestId} from '../logging/request-context';

/**
 * The one writer of the audit log (table `audit_event`). Callers pass the
 * SQL executor of the transaction that makes the change, so the event
 * commits or rolls back with it.
 */

/** Runs one parameterised statement; a pg client, pool or juggler execute. */
export type SqlExecutor = (sql: string, params: unknown[]) => Promise<unknown>;

export type AuditChanges = Record<string, [unknown, unknown]>;

export interface AuditEventInput {
  actorUserId: number | null;
  /** What happened, e.g. `create`, `update`, `delete`, `run`, `login.failed`. */
  action: string;
  /** The kind of thing it happened to, e.g. `scheduler`, `user`, `session`. */
  entity: string;
  entityId?: string | number | null;
  reason?: string | null;
  changes?: AuditChanges;
  requestId?: string | null;
}

/** Fields whose values never reach the audit log, only the fact they changed. */
export const SECRET_FIELDS: ReadonlySet<string> = new Set([
  'password',
  'password_hash',
  'passwordHash',
  'token',
  'secret',
  'value_secret',
]);

const MASK = '[redacted]';

/** The longest reason accepted (header `X-Change-Reason` or body `reason`). */
export const MAX_REASON_LENGTH = 500;

/**
 * Each field of `after` whose value differs from `before`, as [before, after];
 * secret fields are masked. A created entity has `before` = {} and a deleted
 * one `after` = {}, so every field shows up.
 */
export function diffChanges(
  before: Record<string, unknown>,
  after: Record<string, unknown>,
): AuditChanges {
  const changes: AuditChanges = {};
  const fields = new Set([...Object.keys(before), ...Object.keys(after)]);
  for (const field of fields) {
    const was = before[field];
    const now = after[field];
    if (JSON.stringify(was) === JSON.stringify(now)) continue;
    changes[field] = SECRET_FIELDS.has(field)
      ? [was === undefined ? null : MASK, now === undefined ? null : MASK]
      : [was === undefined ? null : was, now === undefined ? null : now];
  }
  return changes;
}

/** Appends one event through `execute` (the change's own transaction). */
export async function appendAuditEvent(
  execute: SqlExecutor,
  event: AuditEventInput,
): Promise<void> {
  await execute(
    `INSERT INTO audit_event
       (actor_user_id, action, entity, entity_id, reason, changes, request_id)
     VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7)`,
    [
      event.actorUserId,
      event.action,
      event.entity,
      event.entityId == null ? null : String(event.entityId),
      event.reason ?? null,
      JSON.stringify(event.changes ?? {}),
      event.requestId ?? currentRequestId() ?? null,
    ],
  );
}
