import type {SqlExecutor} from '../audit/audit-event';
import {newSigningSecret} from './webhook-signature';

/** The tables whose rows sign with a rotatable Standard Webhooks secret. */
const SIGNED = {
  http_target: 'http-target',
  webhook: 'webhook',
} as const;
export type SignedTable = keyof typeof SIGNED;

export interface Rotation {
  table: SignedTable;
  id: number;
  actorUserId: number;
  /** How long the previous secret keeps signing beside the new one. */
  windowMinutes: number;
  reason?: string | null;
  requestId?: string | null;
  /** Extra condition on the row (e.g. ownership), with its parameter as $7. */
  scope?: {condition: string; value: unknown};
  now?: Date;
}

/**
 * Makes a new signing secret for an HTTP target or a webhook and keeps the
 * previous one signing until the window ends. The rotation and its audit
 * event (secrets redacted) are one statement, so they commit together.
 * Resolves undefined when no row matched.
 */
export async function rotateSigningSecret(
  sql: SqlExecutor,
  rotation: Rotation,
): Promise<{secret: string; until: Date} | undefined> {
  const secret = newSigningSecret();
  const until = new Date(
    (rotation.now ?? new Date()).getTime() + rotation.windowMinutes * 60_000,
  );
  const scope = rotation.scope ? `AND (${rotation.scope.condition})` : '';
  const rows = (await sql(
    `WITH rotated AS (
       UPDATE ${rotation.table}
          SET previous_signing_secret = signing_secret, signing_secret = $2,
              previous_secret_expires_at = $3, secret_rotated_at = now()
        WHERE id = $1 ${scope}
       RETURNING id
     ), audited AS (
       INSERT INTO audit_event (actor_user_id, action, entity, entity_id, reason, changes, request_id)
       SELECT $4, 'rotate-secret', '${SIGNED[rotation.table]}', $1::text, $5,
              jsonb_build_object('signing_secret', jsonb_build_array('[redacted]', '[redacted]'),
                                 'previous_secret_expires_at', jsonb_build_array(NULL, $3::text)),
              $6
         FROM rotated
     )
     SELECT id FROM rotated`,
    [
      rotation.id,
      secret,
      until,
      rotation.actorUserId,
      rotation.reason ?? null,
      rotation.requestId ?? null,
      ...(rotation.scope ? [rotation.scope.value] : []),
    ],
  )) as unknown[];
  return rows.length === 0 ? undefined : {secret, until};
}
