import type {Entity} from '@loopback/repository';
import type {HookContext} from '../crud/crud-resource';
import type {Scheduler} from '../models';
import {repositoryOf, unprocessable} from './hook-helpers';

const SHOWN = 50;

/**
 * A report, worker or reminder that schedulers still run cannot be deleted:
 * refuse with 422 naming them (the foreign key would refuse it anyway).
 */
export function refuseWhileScheduled(
  field: 'report_id' | 'worker_id' | 'reminder_id' | 'http_target_id',
) {
  return async (current: Entity, ctx: HookContext): Promise<void> => {
    const schedulers = await repositoryOf<Scheduler>(ctx, 'Scheduler');
    const id = current.getId();
    const users = await schedulers.find({
      where: {[field]: id},
      fields: {id: true},
      order: ['id ASC'],
      limit: SHOWN,
    });
    if (users.length === 0) return;
    const ids = users.map(scheduler => scheduler.id!);
    const name = (current.constructor as typeof Entity).modelName;
    throw unprocessable({
      path: '/id',
      code: 'inUse',
      message: `${name} ${id} is still used by scheduler${ids.length > 1 ? 's' : ''} ${ids.join(', ')}${ids.length === SHOWN ? ' and more' : ''}: delete or change them first`,
      info: {scheduler_ids: ids},
    });
  };
}
