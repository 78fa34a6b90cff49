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
    // Lookup, insert and the run's success mark in one statement: one round
    // trip and one commit a task, the notifications and the outcome together.
    const mark = context.successMark?.(4, 'EXISTS (SELECT 1 FROM r)');
    const {rows} = await this.pool.query<{found: boolean; sent: number}>(
      `WITH r AS (SELECT message, user_ids, group_ids FROM reminder WHERE id = $1),
            recipients AS (
              SELECT DISTINCT u.id
                FROM app_user u, r
               WHERE u.active
                 AND (u.id IN (SELECT jsonb_array_elements_text(r.user_ids)::int)
                      OR u.group_id IN (SELECT jsonb_array_elements_text(r.group_ids)::int))
            ),
            sent AS (
              INSERT INTO notification (user_id, title, body, payload)
              SELECT recipients.id, 'Reminder', COALESCE($2::text, r.message), $3
                FROM recipients, r
              RETURNING 1
            )${mark ? `, succeeded AS (${mark.text})` : ''}
       SELECT EXISTS (SELECT 1 FROM r) AS found,
              (SELECT count(*) FROM sent)::int AS sent`,
      [
        context.message.id,
        override ?? null,
        {
          reminder_id: context.message.id,
          scheduler_id: context.message.scheduler_id,
          execution_key: context.executionKey ?? null,
        },
        ...(mark?.values ?? []),
      ],
    );
    if (!rows[0].found) {
      throw new TaskFailure(`reminder ${context.message.id} does not exist`);
    }
    context.logger.info('Reminder sent', {recipients: rows[0].sent});
  }
}
