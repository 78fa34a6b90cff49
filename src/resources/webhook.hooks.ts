import type {AnyObject, DataObject} from '@loopback/repository';
import type {SqlExecutor} from '../audit/audit-event';
import type {CurrentUser} from '../auth/current-user';
import type {CrudHooks} from '../crud/crud-resource';
import {repositorySql} from '../database/repository-sql';
import type {ErrorDetail} from '../middleware/error-mapping';
import type {Webhook} from '../models';
import {urlProblems} from '../validation/http-target-rules';
import {fieldError, validationError} from '../validation/validation-error';
import {repositoryOf} from './hook-helpers';

/**
 * Each id of scheduler_ids must name a scheduler, and an operator's one
 * they own (as tickets are changed only by their owner): an operator never
 * subscribes to another person's runs.
 */
export async function webhookSchedulerErrors(
  sql: SqlExecutor,
  user: CurrentUser,
  ids: unknown,
): Promise<ErrorDetail[]> {
  if (!Array.isArray(ids) || ids.length === 0) return [];
  const rows = (await sql(
    `SELECT id, user_id FROM scheduler WHERE id = ANY($1::int[])`,
    [ids],
  )) as Array<{id: number; user_id: number | null}>;
  const found = new Map(rows.map(row => [row.id, row.user_id]));
  const errors: ErrorDetail[] = [];
  ids.forEach((id: number, index: number) => {
    if (!found.has(id)) {
      errors.push(
        fieldError(
          `scheduler_ids/${index}`,
          'notFound',
          `Scheduler ${id} does not exist`,
        ),
      );
    } else if (user.role !== 'admin' && found.get(id) !== user.id) {
      errors.push(
        fieldError(
          `scheduler_ids/${index}`,
          'notOwner',
          `Scheduler ${id} is not yours: operators subscribe only to schedulers they own`,
        ),
      );
    }
  });
  return errors;
}

/** Setting active again clears the disabling and its failure count. */
function reenabled(patch: AnyObject, current: Webhook): AnyObject {
  if (patch.active !== true || current.active) return patch;
  return {
    ...patch,
    disabled_at: null,
    disabled_reason: null,
    consecutive_failures: 0,
  };
}

/** What the schema cannot say about a webhook body: its URL's rules, its schedulers' owners. */
export async function webhookBodyErrors(
  sql: SqlExecutor,
  user: CurrentUser,
  body: AnyObject,
): Promise<ErrorDetail[]> {
  return [
    // No user:password in the URL: it would be stored and shown in the clear.
    ...urlProblems(body.url).map(detail => ({
      ...detail,
      message: detail.message.replace(
        /; put credentials in secret_headers \(Authorization\)/,
        '',
      ),
    })),
    ...(await webhookSchedulerErrors(sql, user, body.scheduler_ids)),
  ];
}

export const webhookHooks: CrudHooks<Webhook> = {
  // Admins see every webhook; operators (and viewers) only their own.
  scope: user => (user.role === 'admin' ? undefined : {user_id: user.id}),
  async beforeUpdate(patch, current, ctx) {
    const schedulers = await repositoryOf(ctx, 'Scheduler');
    const errors = await webhookBodyErrors(
      repositorySql(schedulers as never),
      ctx.user,
      patch,
    );
    if (errors.length > 0) throw validationError(errors);
    return reenabled(patch, current) as DataObject<Webhook>;
  },
};
