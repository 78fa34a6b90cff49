import {authenticate} from '@loopback/authentication';
import {BEARER_STRATEGIES} from '../auth/bearer-strategies';
import {authorize} from '@loopback/authorization';
import {Constructor, Context, inject} from '@loopback/core';
import type {
  AnyObject,
  DataObject,
  Entity,
  Filter,
  PropertyDefinition,
  Where,
} from '@loopback/repository';
import {
  del,
  get,
  HttpErrors,
  oas,
  param,
  patch,
  post,
  requestBody,
  Response,
  RestBindings,
} from '@loopback/rest';
import {SecurityBindings} from '@loopback/security';
import type {CurrentUser} from '../auth/current-user';
import {boundedFilter, tieBrokenOrder} from '../validation/filter-rules';
import {crudDocs} from './crud-docs';
import type {CrudResource, HookContext} from './crud-resource';
import {
  createBodySchema,
  dateProperties,
  idPropertyOf,
  responseSchema,
  jsonProperties,
  textProperties,
  updateBodySchema,
  visibleFilterSchema,
  visibleProperties,
} from './crud-schemas';
import {auditedCreate, auditedWrite, visible} from './audited-write';
import {changeReasonHeader} from './change-reason-header';
import {recordReaderOf} from './record-reader';
import {EntityRepository, repositoryKey} from './repositories';

type Id = number | string;

/**
 * Ids are positive integers (32-bit, or up to 2^53 - 1 for a bigint column:
 * beyond that a JSON number no longer names one row) or, for keyed
 * resources, safe names.
 */
export function idParam(model: CrudResource['model']) {
  const definition = model.definition.properties[idPropertyOf(model)];
  return param({
    name: 'id',
    in: 'path',
    required: true,
    schema: idSchema(definition),
  });
}

function idSchema(definition: PropertyDefinition) {
  if (definition.type === 'string' || definition.type === String) {
    return {type: 'string' as const, pattern: '^[A-Za-z0-9._-]{1,100}$'};
  }
  if (definition.postgresql?.dataType === 'bigint') {
    return {
      type: 'integer' as const,
      format: 'int64',
      minimum: 1,
      maximum: Number.MAX_SAFE_INTEGER,
    };
  }
  return {type: 'integer' as const, format: 'int32', minimum: 1};
}

const json = (schema: object) => ({content: {'application/json': {schema}}});

/**
 * A LIKE pattern for text anywhere in a lower-cased column: the term is
 * lower-cased and its wildcards (% _) and escape character are escaped, so
 * it matches only itself.
 */
export function containing(term: string): string {
  return `%${term.toLowerCase().replace(/[\\%_]/g, c => `\\${c}`)}%`;
}

/**
 * Builds the REST controller of one resource: find, findById, create,
 * updateById and deleteById under `resource.path`, each behind a bearer token
 * and the roles `resource.access` names; operations it does not name are not
 * offered. Tagged with the model name, so a client generator produces
 * `<Model>Service`.
 */
/*
 * Error responses go into each operation's own `responses`, not through
 * `@oas.response`: that decorator's metadata is not inherited through the
 * mixin chain below, so only the outermost class's entries survived. The
 * error-responses enhancer gives them the uniform error body schema.
 */
const NOT_FOUND = {'404': {description: 'No such record'}};
const INVALID = {'422': {description: 'Validation failed'}};

export function defineCrudController<E extends Entity>(
  resource: CrudResource<E>,
): Constructor<unknown> {
  const {model, path, access, hooks = {}} = resource;
  const itemPath = `${path}/{id}`;
  // The audit log names the kind of record in kebab case: scheduler, user, …
  const auditEntity = model.modelName
    .replace(/([a-z])([A-Z])/g, '$1-$2')
    .toLowerCase();
  const idName = idPropertyOf(model);
  const filterable = {
    all: visibleProperties(model),
    dates: dateProperties(model),
    texts: textProperties(model),
    jsons: jsonProperties(model),
  };
  const itemSchema = responseSchema(model);
  const filterSchema = visibleFilterSchema(model);
  const notFound = (id: Id) =>
    new HttpErrors.NotFound(
      `Entity not found: ${model.modelName} with id ${id}`,
    );

  @oas.tags(model.modelName)
  @authenticate(...BEARER_STRATEGIES)
  class ReadController {
    constructor(
      @inject(repositoryKey(model.modelName))
      readonly repository: EntityRepository<E>,
      @inject(SecurityBindings.USER) readonly user: CurrentUser,
      @inject.context() readonly context: Context,
      @inject(RestBindings.Http.RESPONSE) readonly response: Response,
    ) {}

    @get(path, {
      ...crudDocs(resource, 'find', access.read),
      responses: {
        '200': {
          description: `${model.modelName} records matching the filter; limit defaults to 100, at most 1000`,
          ...json({type: 'array', items: itemSchema}),
        },
      },
    })
    @authorize({allowedRoles: access.read})
    async find(
      @param.query.object('filter', filterSchema) filter?: Filter<E>,
      @param.query.string('q', {
        schema: {type: 'string', minLength: 1, maxLength: 200},
        description: resource.searchColumn
          ? 'Text to find, case-insensitively, anywhere in the searchable fields (combined with filter)'
          : 'Not supported by this resource (ignored)',
      })
      q?: string,
    ): Promise<E[]> {
      const bounded = boundedFilter(filter, filterable);
      const search =
        resource.searchColumn && q
          ? ({[resource.searchColumn]: {like: containing(q)}} as Where<E>)
          : undefined;
      const where = this.scoped(bounded.where);
      const order = bounded.order ?? resource.defaultOrder;
      return this.repository.find({
        ...bounded,
        ...(order ? {order: tieBrokenOrder(order, idName)} : {}),
        where: search ? ({and: [where ?? {}, search]} as Where<E>) : where,
      });
    }

    @get(itemPath, {
      ...crudDocs(resource, 'findById', access.read),
      responses: {
        '200': {description: `The ${model.modelName}`, ...json(itemSchema)},
        ...NOT_FOUND,
      },
    })
    @authorize({allowedRoles: access.read})
    async findById(@idParam(model) id: Id): Promise<E> {
      return this.loadVisible(id);
    }

    protected scoped(where?: Where<E>): Where<E> | undefined {
      const scope = hooks.scope?.(this.user);
      if (!scope) return where;
      return where ? ({and: [where, scope]} as Where<E>) : scope;
    }

    /** The record, if it exists and the caller may see it; else 404. */
    protected async loadVisible(id: Id): Promise<E> {
      const where = this.scoped({[idName]: id} as Where<E>)!;
      // Plain conditions (the id, an owner scope) skip juggler's query building.
      const reader = recordReaderOf(this.repository);
      const conditions = reader.plainConditions(where);
      const found = conditions
        ? await reader.findOne(conditions)
        : await this.repository.findOne({where});
      if (!found) throw notFound(id);
      return found;
    }

    protected get hookContext(): HookContext {
      return {user: this.user, context: this.context};
    }

    /** The write and its audit event, in one transaction. */
    protected async audited<T>(
      action: 'create' | 'update' | 'delete',
      work: Parameters<typeof auditedWrite<E, T>>[2],
    ): Promise<T> {
      return auditedWrite(
        this.repository,
        {
          actorUserId: this.user.id,
          action,
          entity: auditEntity,
          request: await this.context.get(RestBindings.Http.REQUEST),
        },
        work,
      );
    }
  }

  type Base = Constructor<ReadController>;

  const withCreate = (base: Base) => {
    class CreateController extends base {
      @post(path, {
        ...crudDocs(resource, 'create', access.create!),
        responses: {
          '201': {
            description: `The created ${model.modelName}`,
            ...json(itemSchema),
          },
          ...INVALID,
        },
      })
      @authorize({allowedRoles: access.create!})
      async create(
        @requestBody({required: true, ...json(createBodySchema(resource))})
        body: AnyObject,
        // Read from the request by the audit; declared so clients can send it.
        @changeReasonHeader() _reason?: string,
      ): Promise<E> {
        const data = hooks.beforeCreate
          ? await hooks.beforeCreate(body, this.hookContext)
          : body;
        const result = await auditedCreate(
          this.repository,
          {
            actorUserId: this.user.id,
            entity: auditEntity,
            request: await this.context.get(RestBindings.Http.REQUEST),
          },
          data,
          'password' in body,
        );
        this.response.status(201);
        return result;
      }
    }
    return CreateController;
  };

  const withUpdate = (base: Base) => {
    class UpdateController extends base {
      @patch(itemPath, {
        ...crudDocs(resource, 'updateById', access.update!),
        responses: {
          '200': {
            description: `The updated ${model.modelName}`,
            ...json(itemSchema),
          },
          ...NOT_FOUND,
          ...INVALID,
        },
      })
      @authorize({allowedRoles: access.update!})
      async updateById(
        @idParam(model) id: Id,
        @requestBody({required: true, ...json(updateBodySchema(resource))})
        body: AnyObject,
        @changeReasonHeader() _reason?: string,
      ): Promise<E> {
        const current = await this.loadVisible(id);
        const change = hooks.beforeUpdate
          ? await hooks.beforeUpdate(body, current, this.hookContext)
          : body;
        if (Object.keys(change).length === 0) {
          return this.repository.findById(id);
        }
        return this.audited('update', async options => {
          await this.repository.updateById(
            id,
            change as DataObject<E>,
            options,
          );
          const updated = await this.repository.findById(
            id,
            undefined,
            options,
          );
          return {
            id,
            before: visible(current),
            after: visible(updated),
            secretChanged: 'password' in body,
            result: updated,
          };
        });
      }
    }
    return UpdateController;
  };

  const withDelete = (base: Base) => {
    class DeleteController extends base {
      @del(itemPath, {
        ...crudDocs(resource, 'deleteById', access.delete!),
        responses: {
          '204': {description: 'Deleted permanently'},
          ...NOT_FOUND,
          ...(resource.deleteConflict
            ? {'409': {description: resource.deleteConflict}}
            : {}),
        },
      })
      @authorize({allowedRoles: access.delete!})
      async deleteById(
        @idParam(model) id: Id,
        @changeReasonHeader() _reason?: string,
      ): Promise<void> {
        const current = await this.loadVisible(id);
        await hooks.beforeDelete?.(current, this.hookContext);
        await this.audited('delete', async options => {
          await this.repository.deleteById(id, options);
          return {id, before: visible(current), after: {}, result: undefined};
        });
      }
    }
    return DeleteController;
  };

  let Controller: Base = ReadController;
  if (access.create) Controller = withCreate(Controller);
  if (access.update) Controller = withUpdate(Controller);
  if (access.delete) Controller = withDelete(Controller);
  // The class name becomes the operationId prefix: unique per resource.
  Object.defineProperty(Controller, 'name', {
    value: `${model.modelName}Controller`,
  });
  return Controller;
}
