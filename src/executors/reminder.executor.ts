import type {Pool} from 'pg';
import {MAX_REMINDER_MESSAGE_LENGTH} from '../validation/scheduler-rules';
import {TaskContext, TaskExecutor, TaskFailure} from './task-executor';

/**
 * Sends a reminder as web notifications: one per active recipient, the
 * reminder's users plus the members of its groups, each user once. The
 * params' `message` overrides the reminder's own. Bodies are plain text,
 * stored as given: whoever shows them must not render them as HTML.
 */
export class ReminderExecutor implements TaskExecutor {
  constructor(private readonly pool: Pool) {}

  async execute(context: TaskContext): Promise<void> {
    const {rows: reminders} = await this.pool.query<{message: string}>(
      'SELECT message FROM reminder WHERE id = $1',
      [context.message.id],
    );
    if (reminders.length === 0) {
      throw new TaskFailure(`reminder ${context.message.id} does not exist`);
    }
    const override = context.params.message;
    // Saving checks it too; this guards schedulers saved before that check.
    if (
      override !== undefined &&
      (typeof override !== 'string' ||
        override.length > MAX_REMINDER_MESSAGE_LENGTH)
    ) {
      throw new TaskFailure(
        `params.message must be plain text of at most ${MAX_REMINDER_MESSAGE_LENGTH} characters`,
      );
    }
    const body = override ?? reminders[0].message;
    const {rowCount} = await this.pool.query(
      `WITH r AS (SELECT user_ids, group_ids FROM reminder WHERE id = $1),
            recipients AS (
              SELECT DISTINCT u.id
                FROM app_user u, r
               WHERE u.active
                 AND (u.id IN (SELECT jsonb_array_elements_text(r.user_ids)::int)
                      OR u.group_id IN (SELECT jsonb_array_elements_text(r.group_ids)::int))
            )
       INSERT INTO notification (user_id, title, body, payload)
       SELECT id, 'Reminder', $2, $3 FROM recipients`,
      [
        context.message.id,
        body,
        {
          reminder_id: context.message.id,
          scheduler_id: context.message.scheduler_id,
          execution_key: context.executionKey ?? null,
        },
      ],
    );
    context.logger.info('Reminder sent', {recipients: rowCount});
  }
}
