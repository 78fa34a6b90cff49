import {authenticate} from '@loopback/authentication';
import {BEARER_STRATEGIES} from '../auth/bearer-strategies';
import {authorize} from '@loopback/authorization';
import {inject} from '@loopback/core';
import {get, getModelSchemaRef, oas, param} from '@loopback/rest';
import {EVERYONE} from '../auth/roles';
import {idParam} from '../crud/crud-controller.factory';
import type {EntityRepository} from '../crud/repositories';
import {repositorySql} from '../database/repository-sql';
import {Scheduler, SchedulerExecution} from '../models';
import {DEFAULT_PAGE_LIMIT, MAX_PAGE_LIMIT} from '../validation/filter-rules';
import {schedulerNotFound} from '../database/missing-scheduler';

const EXECUTION_STATUSES = [
  'claimed',
  'published',
  'running',
  'retrying',
  'succeeded',
  'failed',
  'skipped',
] as const;
const EXECUTION_TRIGGERS = [
  'schedule',
  'manual',
  'backfill',
  'redrive',
] as const;

/** GET /schedulers/{id}/executions: a scheduler's runs, newest first. */
@oas.tags('Scheduler')
@authenticate(...BEARER_STRATEGIES)
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
      'The run ledger rows of one scheduler, newest first, paged by limit and skip, optionally only one status or trigger. Roles: admin, operator, viewer.',
    responses: {
      '200': {
        description: `Runs of the scheduler, newest first; limit defaults to ${DEFAULT_PAGE_LIMIT}, at most ${MAX_PAGE_LIMIT}`,
        content: {
          'application/json': {
            schema: {
              type: 'array',
              items: {
                title: 'SchedulerRun',
                allOf: [
                  getModelSchemaRef(SchedulerExecution),
                  {
                    type: 'object',
                    required: ['trigger'],
                    properties: {
                      trigger: {
                        type: 'string',
                        enum: [...EXECUTION_TRIGGERS],
                        description:
                          'What started the run: schedule (the producer), manual (run now, a queued report), backfill or redrive',
                      },
                    },
                  },
                ],
              },
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
    @param.query.string('status', {
      schema: {type: 'string', enum: [...EXECUTION_STATUSES]},
      description: 'Only runs with this status',
    })
    status?: string,
    @param.query.string('trigger', {
      schema: {type: 'string', enum: [...EXECUTION_TRIGGERS]},
      description: 'Only runs started this way',
    })
    trigger?: string,
  ): Promise<Array<Record<string, unknown>>> {
    if (!(await this.schedulers.exists(id))) {
      throw schedulerNotFound(id);
    }
    // The page and each run's trigger by SQL (juggler models have a
    // trigger() method, so it cannot be a model property), the rows by the model.
    const page = (await repositorySql(this.executions)(
      `SELECT id, trigger FROM scheduler_execution
        WHERE scheduler_id = $1
          AND ($2::text IS NULL OR status = $2)
          AND ($3::text IS NULL OR trigger = $3)
        ORDER BY executed_at DESC, id DESC
        LIMIT $4 OFFSET $5`,
      [id, status ?? null, trigger ?? null, limit, skip],
    )) as Array<{id: string | number; trigger: string}>;
    const ids = page.map(row => Number(row.id));
    const found = new Map(
      (await this.executions.find({where: {id: {inq: ids}}})).map(run => [
        Number(run.id),
        run,
      ]),
    );
    return page.flatMap(row => {
      const run = found.get(Number(row.id));
      return run ? [{...run.toJSON(), trigger: row.trigger}] : [];
    });
  }
}
