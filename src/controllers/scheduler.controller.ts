import {inject} from '@loopback/core';
import {Filter, repository} from '@loopback/repository';
import {
  del,
  get,
  getModelSchemaRef,
  oas,
  param,
  patch,
  post,
  requestBody,
  Response,
  RestBindings,
  SchemaObject,
} from '@loopback/rest';
import {Scheduler} from '../models';
import {SchedulerRepository} from '../repositories';
import {boundedFilter} from '../validation/filter-rules';
import {schedulerRuleErrors} from '../validation/scheduler-rules';
import {validationError} from '../validation/validation-error';

const SERVER_OWNED = ['id', 'created_at', 'updated_at', 'user_id'] as const;
const SCHEDULER_PROPERTIES: ReadonlySet<string> = new Set(
  Object.keys(Scheduler.definition.properties),
);

/** `user_id_created` is the create-only spelling of the owner, stored as `user_id`. */
function newSchedulerSchema(): SchemaObject {
  const base = getModelSchemaRef(Scheduler, {
    title: 'NewScheduler',
    exclude: [...SERVER_OWNED],
  });
  const schema = base.definitions.NewScheduler as SchemaObject;
  schema.properties = {
    ...schema.properties,
    user_id_created: {
      type: 'integer',
      minimum: 1,
      maximum: 2147483647,
      nullable: true,
      description: 'User who creates the scheduler; stored as user_id',
    },
  };
  return schema;
}

/** Ids are positive 32-bit integers; anything else is a 400, not a lookup. */
const idParam = () =>
  param({
    name: 'id',
    in: 'path',
    required: true,
    schema: {type: 'integer', format: 'int32', minimum: 1},
  });

@oas.tags('Scheduler')
export class SchedulerController {
  constructor(
    @repository(SchedulerRepository)
    private readonly schedulers: SchedulerRepository,
    @inject(RestBindings.Http.RESPONSE)
    private readonly response: Response,
  ) {}

  @post('/schedulers', {
    responses: {
      '201': {
        description: 'The created scheduler',
        content: {'application/json': {schema: getModelSchemaRef(Scheduler)}},
      },
    },
  })
  @oas.response(422, {description: 'Validation failed'})
  async create(
    @requestBody({
      required: true,
      content: {'application/json': {schema: newSchedulerSchema()}},
    })
    body: Omit<Scheduler, (typeof SERVER_OWNED)[number]> & {
      user_id_created?: number | null;
    },
  ): Promise<Scheduler> {
    const {user_id_created: owner, ...fields} = body;
    const record = {...fields, user_id: owner ?? null};
    this.assertValid(record);
    const created = await this.schedulers.create(record);
    this.response.status(201);
    // Read back so the answer carries the database's defaults and timestamps.
    return this.schedulers.findById(created.id);
  }

  @get('/schedulers', {
    responses: {
      '200': {
        description:
          'Schedulers matching the filter; limit defaults to 100, at most 1000',
        content: {
          'application/json': {
            schema: {type: 'array', items: getModelSchemaRef(Scheduler)},
          },
        },
      },
    },
  })
  async find(
    @param.filter(Scheduler) filter?: Filter<Scheduler>,
  ): Promise<Scheduler[]> {
    return this.schedulers.find(boundedFilter(filter, SCHEDULER_PROPERTIES));
  }

  @get('/schedulers/{id}', {
    responses: {
      '200': {
        description: 'The scheduler',
        content: {'application/json': {schema: getModelSchemaRef(Scheduler)}},
      },
    },
  })
  @oas.response(404, {description: 'No scheduler has this id'})
  async findById(@idParam() id: number): Promise<Scheduler> {
    return this.schedulers.findById(id);
  }

  @patch('/schedulers/{id}', {
    responses: {
      '200': {
        description: 'The updated scheduler',
        content: {'application/json': {schema: getModelSchemaRef(Scheduler)}},
      },
    },
  })
  @oas.response(404, {description: 'No scheduler has this id'})
  @oas.response(422, {description: 'Validation failed'})
  async updateById(
    @idParam() id: number,
    @requestBody({
      required: true,
      content: {
        'application/json': {
          schema: getModelSchemaRef(Scheduler, {
            title: 'SchedulerPatch',
            partial: true,
            exclude: [...SERVER_OWNED],
          }),
        },
      },
    })
    patchBody: Partial<Scheduler>,
  ): Promise<Scheduler> {
    const current = await this.schedulers.findById(id);
    // Judge what the scheduler would become, not the patch alone.
    this.assertValid({...current.toJSON(), ...patchBody});
    if (Object.keys(patchBody).length > 0) {
      await this.schedulers.updateById(id, patchBody);
    }
    return this.schedulers.findById(id);
  }

  @del('/schedulers/{id}', {
    responses: {'204': {description: 'Deleted permanently'}},
  })
  @oas.response(404, {description: 'No scheduler has this id'})
  async deleteById(@idParam() id: number): Promise<void> {
    await this.schedulers.deleteById(id);
  }

  private assertValid(record: Partial<Scheduler>): void {
    const errors = schedulerRuleErrors(record);
    if (errors.length > 0) throw validationError(errors);
  }
}
