import type {AnyObject} from '@loopback/repository';
import type {AppConfig} from '../config';
import type {CrudHooks, HookContext} from '../crud/crud-resource';
import {workerCommandProblem} from '../executors/worker-command';
import {AppBindings} from '../keys';
import type {Worker} from '../models';
import {fieldError, validationError} from '../validation/validation-error';
import {refuseWhileScheduled} from './in-use.hooks';

/** Admins decide which programs run; a command must stay inside WORKERS_DIR. */
async function checkCommand(body: AnyObject, ctx: HookContext): Promise<void> {
  if (body.command === undefined) return;
  const config = await ctx.context.get<AppConfig>(AppBindings.CONFIG);
  const problem = workerCommandProblem(config.workersDir, String(body.command));
  if (problem) {
    throw validationError([
      fieldError('command', 'workerCommand', `command ${problem}`),
    ]);
  }
}

export const workerHooks: CrudHooks<Worker> = {
  async beforeCreate(body, ctx) {
    await checkCommand(body, ctx);
    return body;
  },
  async beforeUpdate(patch, _current, ctx) {
    await checkCommand(patch, ctx);
    return patch;
  },
  beforeDelete: refuseWhileScheduled('worker_id'),
};
