import {authenticate} from '@loopback/authentication';
import {BEARER_STRATEGIES} from '../auth/bearer-strategies';
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
import {AppBindings, MetricsBindings} from '../keys';
import type {Metrics} from '../metrics/metrics';
import {FailedTask, Scheduler, SchedulerExecution} from '../models';
import {markPublished} from '../database/mark-published';
import {BrokerService} from '../queue/broker.service';
import {workerParamKeyProblems} from '../executors/worker-params';
import {TASK_TYPES, TaskMessage, TaskType} from '../queue/task-message';

export interface RedriveResult {
  failed_task_id: number;
  execution_id: number;
  execution_key: string;
  /** published: the broker confirmed it; pending: the sweeper will send it. */
  status: 'published' | 'pending';
}

/** POST /failed-tasks/{id}/redrive: run a failed task again as a fresh task. */
@oas.tags('FailedTask')
@authenticate(...BEARER_STRATEGIES)
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
    @inject(MetricsBindings.METRICS) private readonly metrics: Metrics,
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
                status: {
                  type: 'string',
                  enum: ['published', 'pending'],
                  description:
                    "published: the broker confirmed the task; pending: no confirm came, the producer's sweeper publishes the stored run within CRON_SWEEP_AFTER_MS",
                },
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
    if (type === 'worker') {
      const problems = workerParamKeyProblems(params);
      if (problems.length > 0) {
        throw new HttpErrors.UnprocessableEntity(problems.join('; '));
      }
    }
    // A broker that is down answers 503 before anything is stored.
    const publisher = await this.broker.taskPublisher();
    const message: TaskMessage = {
      type,
      id: failed.task_id,
      scheduler_id: failed.scheduler_id,
      params_scheduler: JSON.stringify(params),
    };
    const {executionId, executionKey} = await this.storeRun(id, message);
    this.metrics.count('redrives');
    const confirmed = await publisher.publish([
      {executionId, executionKey, message},
    ]);
    // Without a confirm the broker may or may not hold the message: the run
    // stays, and the sweeper sends its stored payload (never a second copy
    // from the user's retry, never without the edits).
    if (confirmed.size > 0) {
      await markPublished(
        {query: (text, values) => this.executions.execute(text, values)},
        confirmed,
      );
    }
    this.response.status(202);
    return {
      failed_task_id: id,
      execution_id: executionId,
      execution_key: executionKey,
      status: confirmed.has(executionId) ? 'published' : 'pending',
    };
  }

  /**
   * One statement, so one transaction: counts the re-drive, inserts its run
   * with the message to publish (the outbox) and its audit event. The row lock on the failed
   * task orders concurrent re-drives, so each gets its own key.
   */
  private async storeRun(
    failedTaskId: number,
    message: TaskMessage,
  ): Promise<{executionId: number; executionKey: string}> {
    const rows = (await this.executions.execute(
      `WITH counted AS (
         UPDATE failed_task
            SET redrive_count = redrive_count + 1, redriven_at = now(), redriven_by = $2
          WHERE id = $1
          RETURNING redrive_count
       )
       , run AS (
         INSERT INTO scheduler_execution (scheduler_id, execution_key, container_id, payload, trigger)
         SELECT $3, 'redrive-' || $1 || '-' || counted.redrive_count, $4, $5::jsonb, 'redrive'
           FROM counted
         RETURNING id, execution_key
       ), audited AS (
         INSERT INTO audit_event (actor_user_id, action, entity, entity_id, changes)
         SELECT $2, 'redrive', 'failed-task', $1::text,
                jsonb_build_object('execution_key', jsonb_build_array(NULL, run.execution_key))
           FROM run
       )
       SELECT id, execution_key FROM run`,
      [
        failedTaskId,
        this.user.id,
        message.scheduler_id,
        this.config.containerId,
        JSON.stringify(message),
      ],
    )) as Array<{id: string | number; execution_key: string}>;
    if (rows.length === 0) {
      throw new HttpErrors.NotFound(`FailedTask ${failedTaskId} not found`);
    }
    return {
      executionId: Number(rows[0].id),
      executionKey: rows[0].execution_key,
    };
  }
}
