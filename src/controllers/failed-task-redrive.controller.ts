import {authenticate} from '@loopback/authentication';
import {authorize} from '@loopback/authorization';
import {inject} from '@loopback/core';
import {
  HttpErrors,
  oas,
  post,
  requestBody,
  Response,
  RestBindings,
} from '@loopback/rest';
import {SecurityBindings} from '@loopback/security';
import type {CurrentUser} from '../auth/current-user';
import {OPERATORS} from '../auth/roles';
import type {AppConfig} from '../config';
import {idParam} from '../crud/crud-controller.factory';
import type {EntityRepository} from '../crud/repositories';
import {AppBindings} from '../keys';
import {FailedTask, Scheduler, SchedulerExecution} from '../models';
import {markPublished} from '../database/mark-published';
import {BrokerService} from '../queue/broker.service';
import {TASK_TYPES, TaskType} from '../queue/task-message';

export interface RedriveResult {
  failed_task_id: number;
  execution_id: number;
  execution_key: string;
}

/** POST /failed-tasks/{id}/redrive: run a failed task again as a fresh task. */
@oas.tags('FailedTask')
@authenticate('jwt')
export class FailedTaskRedriveController {
  constructor(
    @inject('repositories.FailedTaskRepository')
    private readonly failedTasks: EntityRepository<FailedTask>,
    @inject('repositories.SchedulerRepository')
    private readonly schedulers: EntityRepository<Scheduler>,
    @inject('repositories.SchedulerExecutionRepository')
    private readonly executions: EntityRepository<SchedulerExecution>,
    @inject('services.BrokerService') private readonly broker: BrokerService,
    @inject(SecurityBindings.USER) private readonly user: CurrentUser,
    @inject(AppBindings.CONFIG) private readonly config: AppConfig,
    @inject(RestBindings.Http.RESPONSE) private readonly response: Response,
  ) {}

  @post('/failed-tasks/{id}/redrive', {
    summary: 'Re-drive a failed task',
    description:
      'Publishes the failed task again as a fresh run with a new execution key (202). Roles: admin, operator.',
    responses: {
      '202': {
        description: 'Published again as a fresh run',
        content: {
          'application/json': {
            schema: {
              type: 'object',
              title: 'RedriveResult',
              properties: {
                failed_task_id: {type: 'integer'},
                execution_id: {type: 'integer'},
                execution_key: {type: 'string'},
              },
            },
          },
        },
      },
    },
  })
  @oas.response(404, {description: 'No such failed task'})
  @oas.response(422, {description: 'Nothing runnable to re-drive'})
  @oas.response(503, {description: 'The broker is unavailable'})
  @authorize({allowedRoles: OPERATORS})
  async redrive(
    @idParam(FailedTask) id: number,
    // A JSON `null` body passes validation like an absent one (the API fuzzer
    // found it as a 500): both mean "run with the failed params".
    @requestBody({
      required: false,
      content: {
        'application/json': {
          schema: {
            type: 'object',
            title: 'RedriveRequest',
            additionalProperties: false,
            properties: {
              params: {
                type: 'object',
                description: 'Params to run with instead of the failed ones',
              },
            },
          },
        },
      },
    })
    body: {params?: Record<string, unknown>} | null = {},
  ): Promise<RedriveResult> {
    const failed = await this.failedTasks.findById(id);
    const type = failed.type as TaskType;
    if (!TASK_TYPES.includes(type) || !failed.task_id || !failed.scheduler_id) {
      throw new HttpErrors.UnprocessableEntity(
        'This failed task has no runnable task (it was a poison message)',
      );
    }
    if (!(await this.schedulers.exists(failed.scheduler_id))) {
      throw new HttpErrors.UnprocessableEntity(
        `Scheduler ${failed.scheduler_id} no longer exists`,
      );
    }
    const params = body?.params ?? JSON.parse(failed.params_scheduler ?? '{}');
    const publisher = await this.broker.taskPublisher();
    const executionKey = `redrive-${id}-${(failed.redrive_count ?? 0) + 1}`;
    const execution = await this.executions.create({
      scheduler_id: failed.scheduler_id,
      execution_key: executionKey,
      executed_at: new Date(),
      container_id: this.config.containerId,
    });
    const executionId = Number(execution.id);
    const confirmed = await publisher.publish([
      {
        executionId,
        executionKey,
        message: {
          type,
          id: failed.task_id,
          scheduler_id: failed.scheduler_id,
          params_scheduler: JSON.stringify(params),
        },
      },
    ]);
    if (!confirmed.has(executionId)) {
      // Not for the sweeper: it would rebuild the message without the edits.
      await this.executions.deleteById(executionId);
      throw new HttpErrors.ServiceUnavailable(
        'The broker did not confirm the task',
      );
    }
    await markPublished(
      {query: (text, values) => this.executions.execute(text, values)},
      confirmed,
    );
    await this.failedTasks.updateById(id, {
      redrive_count: (failed.redrive_count ?? 0) + 1,
      redriven_at: new Date(),
      redriven_by: this.user.id,
    });
    this.response.status(202);
    return {
      failed_task_id: id,
      execution_id: executionId,
      execution_key: executionKey,
    };
  }
}
