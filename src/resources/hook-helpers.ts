import type {Entity} from '@loopback/repository';
import {HttpErrors} from '@loopback/rest';
import type {HookContext} from '../crud/crud-resource';
import {EntityRepository, repositoryKey} from '../crud/repositories';
import type {ErrorDetail} from '../middleware/error-mapping';

export function repositoryOf<E extends Entity>(
  ctx: HookContext,
  modelName: string,
): Promise<EntityRepository<E>> {
  return ctx.context.get<EntityRepository<E>>(repositoryKey(modelName));
}

/** A 422 about the record as a whole, with one detail. */
export function unprocessable(detail: ErrorDetail): Error {
  return Object.assign(new HttpErrors.UnprocessableEntity(detail.message), {
    details: [detail],
  });
}
