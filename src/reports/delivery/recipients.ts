import type {Pool} from 'pg';

export interface Recipient {
  id: number;
  email: string;
  name: string;
}

/**
 * The active users named in `deliver_to` plus the active members of its
 * groups, each once. With nobody named, the report goes to `fallbackUserId`
 * (the caller, or the scheduler's owner).
 */
export async function resolveRecipients(
  db: Pool,
  deliverTo: {user_id: number[]; group_id: number[]},
  fallbackUserId: number | null,
): Promise<Recipient[]> {
  const named = deliverTo.user_id.length > 0 || deliverTo.group_id.length > 0;
  const userIds = named
    ? deliverTo.user_id
    : fallbackUserId === null
      ? []
      : [fallbackUserId];
  if (userIds.length === 0 && deliverTo.group_id.length === 0) return [];
  const {rows} = await db.query<Recipient>(
    `SELECT id, email, name FROM app_user
      WHERE active AND (id = ANY($1::int[]) OR group_id = ANY($2::int[]))
      ORDER BY id`,
    [userIds, deliverTo.group_id],
  );
  return rows;
}
