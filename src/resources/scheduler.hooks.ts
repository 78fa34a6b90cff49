import type {AnyObject} from '@loopback/repository';
import {HttpErrors} from '@loopback/rest';
import type {AppConfig} from '../config';
import type {CrudHooks, HookContext} from '../crud/crud-resource';
import {AppBindings, ProducerBindings} from '../keys';
import type {ErrorDetail} from '../middleware/error-mapping';
import type {Calendar, Scheduler} from '../models';
import {
  pastDateTimeErrors,
  schedulerRuleErrors,
} from '../validation/scheduler-rules';
import {fieldError, validationError} from '../validation/validation-error';
import {repositoryOf} from './hook-helpers';
import {reportParamErrors} from './scheduler-report-check';
import {assertStayAliveAllowed} from './stay-alive-limits';

const TASK_REFERENCES = [
  ['report_id', 'Report'],
  ['worker_id', 'Worker'],
  ['reminder_id', 'Reminder'],
  ['http_target_id', 'HttpTarget'],
] as const;

async function missingTasks(
  record: AnyObject,
  ctx: HookContext,
): Promise<ErrorDetail[]> {
  const errors: ErrorDetail[] = [];
  for (const [field, modelName] of TASK_REFERENCES) {
    const id = record[field];
    if (id === undefined || id === null) continue;
    const repository = await repositoryOf(ctx, modelName);
    if (!(await repository.exists(id))) {
      errors.push(
        fieldError(field, 'notFound', `${modelName} ${id} does not exist`),
      );
    }
  }
  return errors;
}

/** Each id of calendar_ids must name a calendar (checked in one query). */
async function missingCalendars(
  record: AnyObject,
  ctx: HookContext,
): Promise<ErrorDetail[]> {
  const ids = record.calendar_ids;
  if (!Array.isArray(ids) || ids.length === 0) return [];
  const calendars = await repositoryOf<Calendar>(ctx, 'Calendar');
  const found = await calendars.find({
    where: {id: {inq: ids}},
    fields: {id: true},
  });
  const known = new Set(found.map(calendar => calendar.id));
  const missing = (ids as number[]).filter(id => !known.has(id));
  if (missing.length === 0) return [];
  return [
    fieldError(
      'calendar_ids',
      'notFound',
      `Calendar ${missing.join(', ')} does not exist`,
    ),
  ];
}

/**
 * The rules, then that the task it names exists, then a report's params.
 * `armedDateTime` is a date_time being set or re-armed (on create, in the
 * patch, or by resuming a one-time scheduler): it must not lie in the past.
 */
async function assertValid(
  record: AnyObject,
  ctx: HookContext,
  armedDateTime: unknown,
): Promise<void> {
  const {cronCatchUpMinutes} = await ctx.context.get<AppConfig>(
    AppBindings.CONFIG,
  );
  // The clock next runs, run now and backfill read (a test's, when bound):
  // judged by the machine's clock instead, a date the next runs list as
  // ahead was refused as past once the machine's date had passed it.
  const clock = await ctx.context.get(ProducerBindings.CLOCK, {
    optional: true,
  });
  const errors = [
    ...schedulerRuleErrors(record),
    ...pastDateTimeErrors(
      armedDateTime as string | null,
      clock?.() ?? new Date(),
      cronCatchUpMinutes,
    ),
  ];
  if (errors.length === 0) {
    errors.push(...(await missingTasks(record, ctx)));
    errors.push(...(await missingCalendars(record, ctx)));
  }
  if (errors.length === 0)
    errors.push(...(await reportParamErrors(record, ctx)));
  if (errors.length > 0) throw validationError(errors);
}

export const schedulerHooks: CrudHooks<Scheduler> = {
  /** `user_id_created` is the create-only spelling of the owner, `user_id`. */
  async beforeCreate(body, ctx) {
    const {user_id_created: requestedOwner, ...fields} = body;
    const owner = requestedOwner ?? ctx.user.id;
    if (owner !== ctx.user.id && ctx.user.role !== 'admin') {
      throw new HttpErrors.Forbidden(
        'Only admins may create a scheduler for another user',
      );
    }
    const record = {...fields, user_id: owner};
    await assertValid(record, ctx, fields.date_time);
    await assertStayAliveAllowed(record, true, ctx);
    return record;
  },

  /** Judged by what the scheduler would become, not by the patch alone. */
  async beforeUpdate(patch, current, ctx) {
    const record: AnyObject = {...current.toJSON(), ...patch};
    const resumed = patch.status === true && current.status === false;
    const armed =
      patch.date_time !== undefined || resumed ? record.date_time : undefined;
    await assertValid(record, ctx, armed);
    const turnsOn = patch.stay_alive === true && !current.stay_alive;
    await assertStayAliveAllowed(record, turnsOn, ctx, current.id);
    return patch;
  },
};
