import type {AnyObject} from '@loopback/repository';
import {HttpErrors} from '@loopback/rest';
import type {AppConfig} from '../config';
import type {HookContext} from '../crud/crud-resource';
import {AppBindings} from '../keys';
import type {Scheduler} from '../models';
import {fieldError, validationError} from '../validation/validation-error';
import {repositoryOf} from './hook-helpers';

/**
 * A stay-alive scheduler is a permanent process: only admins (who alone
 * define workers) may mark one, and STAY_ALIVE_MAX caps how many the whole
 * installation has. `becomesStayAlive` is true when the save turns
 * stay_alive on (a create with it, or a patch setting it).
 */
export async function assertStayAliveAllowed(
  record: AnyObject,
  becomesStayAlive: boolean,
  ctx: HookContext,
  currentId?: number,
): Promise<void> {
  if (!record.stay_alive || !becomesStayAlive) return;
  if (ctx.user.role !== 'admin') {
    throw new HttpErrors.Forbidden(
      'Only admins may mark a scheduler stay-alive',
    );
  }
  const config = await ctx.context.get<AppConfig>(AppBindings.CONFIG);
  const max = config.stayAlive.maxWorkers;
  const schedulers = await repositoryOf<Scheduler>(ctx, 'Scheduler');
  const {count} = await schedulers.count({
    stay_alive: true,
    ...(currentId === undefined ? {} : {id: {neq: currentId}}),
  });
  if (count >= max) {
    throw validationError([
      fieldError(
        'stay_alive',
        'stayAliveMax',
        `the installation already has ${count} stay-alive schedulers; STAY_ALIVE_MAX allows ${max}`,
      ),
    ]);
  }
}
