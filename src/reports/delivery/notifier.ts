import type {Pool} from 'pg';

/** One web notification per user id (ids are distinct already). */
export async function notifyUsers(
  db: Pool,
  userIds: number[],
  notification: {title: string; body: string; payload: object},
): Promise<number> {
  if (userIds.length === 0) return 0;
  const {rowCount} = await db.query(
    `INSERT INTO notification (user_id, title, body, payload)
     SELECT DISTINCT unnest($1::int[]), $2, $3, $4::jsonb`,
    [userIds, notification.title, notification.body, notification.payload],
  );
  return rowCount ?? 0;
}
