import {authenticate} from '@loopback/authentication';
import {authorize} from '@loopback/authorization';
import {inject} from '@loopback/core';
import {get, getModelSchemaRef, HttpErrors, oas, param} from '@loopback/rest';
import {EVERYONE} from '../auth/roles';
import {idParam} from '../crud/crud-controller.factory';
import type {EntityRepository} from '../crud/repositories';
import {Scheduler, SchedulerExecution} from '../models';
import {DEFAULT_PAGE_LIMIT, MAX_PAGE_LIMIT} from '../validation/filter-rules';

/** GET /schedulers/{id}/executions: a scheduler's runs, newest first. */
@oas.tags('Scheduler')
@authenticate('jwt')
export class SchedulerHistoryController {
  constructor(
    @inject('repositories.SchedulerRepository')
    private readonly schedulers: EntityRepository<Scheduler>,
    @inject('repositories.SchedulerExecutionRepository')
    private readonly executions: EntityRepository<SchedulerExecution>,
  ) {}

  @get('/schedulers/{id}/executions', {
    summary: "List a scheduler's runs",
    description:
      'The run ledger rows of one scheduler, newest first, paged by limit and skip. Roles: admin, operator, viewer.',
    responses: {
      '200': {
        description: `Runs of the scheduler, newest first; limit defaults to ${DEFAULT_PAGE_LIMIT}, at most ${MAX_PAGE_LIMIT}`,
        content: {
          'application/json': {
            schema: {
              type: 'array',
              items: getModelSchemaRef(SchedulerExecution),
            },
          },
        },
      },
    },
  })
  @oas.response(404, {description: 'No scheduler has this id'})
  @authorize({allowedRoles: EVERYONE})
  async findExecutions(
    @idParam(Scheduler) id: number,
    @param.query.integer('limit', {
      schema: {type: 'integer', minimum: 1, maximum: MAX_PAGE_LIMIT},
    })
    limit = DEFAULT_PAGE_LIMIT,
    @param.query.integer('skip', {schema: {type: 'integer', minimum: 0}})
    skip = 0,
  ): Promise<SchedulerExecution[]> {
    if (!(await this.schedulers.exists(id))) {
      throw new HttpErrors.NotFound(
        `Entity not found: Scheduler with id ${id}`,
      );
    }
    return this.executions.find({
      where: {scheduler_id: id},
      order: ['executed_at DESC', 'id DESC'],
      limit,
      skip,
    });
  }
}
