import type {AnyObject} from '@loopback/repository';
import {HttpErrors} from '@loopback/rest';
import type {CrudHooks, HookContext} from '../crud/crud-resource';
import type {ErrorDetail} from '../middleware/error-mapping';
import type {Scheduler} from '../models';
import {schedulerRuleErrors} from '../validation/scheduler-rules';
import {fieldError, validationError} from '../validation/validation-error';
import {repositoryOf} from './hook-helpers';
import {reportParamErrors} from './scheduler-report-check';
import {assertStayAliveAllowed} from './stay-alive-limits';

const TASK_REFERENCES = [
  ['report_id', 'Report'],
  ['worker_id', 'Worker'],
  ['reminder_id', 'Reminder'],
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

/** The rules, then that the task it names exists, then a report's params. */
async function assertValid(record: AnyObject, ctx: HookContext): Promise<void> {
  const errors = schedulerRuleErrors(record);
  if (errors.length === 0) errors.push(...(await missingTasks(record, ctx)));
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
    await assertValid(record, ctx);
    await assertStayAliveAllowed(record, true, ctx);
    return record;
  },

  /** Judged by what the scheduler would become, not by the patch alone. */
  async beforeUpdate(patch, current, ctx) {
    const merged = {...current.toJSON(), ...patch};
    await assertValid(merged, ctx);
    const turnsOn = patch.stay_alive === true && !current.stay_alive;
    await assertStayAliveAllowed(merged, turnsOn, ctx, current.id);
    return patch;
  },
};
