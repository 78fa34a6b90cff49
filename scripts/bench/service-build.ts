import path from 'node:path';
import type * as Application from '../../dist/application';
import type * as ApiDocument from '../../dist/openapi/api-document';
import type * as ClientGenerator from '../../dist/client-generation/client-generator';
import type * as CrudFactory from '../../dist/crud/crud-controller.factory';
import type * as CrudResource from '../../dist/crud/crud-resource';
import type * as Repositories from '../../dist/crud/repositories';
import type * as Columns from '../../dist/models/columns';
import type * as Roles from '../../dist/auth/roles';
import type * as Config from '../../dist/config';
import type * as Logger from '../../dist/logging/logger';
import type * as Repository from '@loopback/repository';

/** The service's build (dist/), seen from dist/client-suite/scripts/bench. */
export const DIST = path.resolve(__dirname, '../../..');

/**
 * The service's own modules from its build, loaded by path (this script is
 * compiled apart from the service), typed by the build's declarations.
 */
export async function loadService() {
  const load = (name: string) => import(path.join(DIST, name));
  return {
    ...((await load('application')) as typeof Application),
    ...((await load('openapi/api-document')) as typeof ApiDocument),
    ...((await load(
      'client-generation/client-generator',
    )) as typeof ClientGenerator),
    ...((await load('crud/crud-controller.factory')) as typeof CrudFactory),
    ...((await load('crud/crud-resource')) as typeof CrudResource),
    ...((await load('crud/repositories')) as typeof Repositories),
    ...((await load('models/columns')) as typeof Columns),
    ...((await load('auth/roles')) as typeof Roles),
    ...((await load('config')) as typeof Config),
    ...((await load('logging/logger')) as typeof Logger),
    repository: (await import('@loopback/repository')) as typeof Repository,
  };
}

export type Service = Awaited<ReturnType<typeof loadService>>;
