import {authenticate} from '@loopback/authentication';
import {BEARER_STRATEGIES} from '../auth/bearer-strategies';
import {authorize} from '@loopback/authorization';
import {inject} from '@loopback/core';
import {
  oas,
  post,
  Request,
  requestBody,
  Response,
  RestBindings,
} from '@loopback/rest';
import {SecurityBindings} from '@loopback/security';
import {randomUUID} from 'node:crypto';
import {MAX_REASON_LENGTH} from '../audit/audit-event';
import type {CurrentUser} from '../auth/current-user';
import {OPERATORS} from '../auth/roles';
import type {AppConfig} from '../config';
import {idParam} from '../crud/crud-controller.factory';
import type {EntityRepository} from '../crud/repositories';
import {markPublished} from '../database/mark-published';
import {
  isMissingScheduler,
  schedulerNotFound,
} from '../database/missing-scheduler';
import {repositorySql} from '../database/repository-sql';
import {workerParamKeyProblems} from '../executors/worker-params';
import {compiledCalendars} from '../calendars/compiled-calendars';
import {AppBindings, ProducerBindings} from '../keys';
import {Calendar, Scheduler} from '../models';
import {calendarMatches, calendarVerdict} from '../scheduling/calendar-match';
import {minuteSlot} from '../scheduling/slots';
import {BrokerService} from '../queue/broker.service';
import type {TaskMessage, TaskType} from '../queue/task-message';
import {fieldError, validationError} from '../validation/validation-error';

export interface RunNowRequest {
  params?: Record<string, unknown>;
  reason?: string;
  ignore_calendars?: boolean;
}

export interface RunNowResult {
  execution_id: number;
  execution_key: string;
  trigger: 'manual';
  /**
   * published: the broker confirmed it; pending: the sweeper publishes the
   * stored run; skipped: a calendar of the scheduler skips this minute (the
   * ledger row says so, and `reason` why).
   */
  status: 'published' | 'pending' | 'skipped';
  reason?: string;
}

/** The reason of a change: the body's, else the X-Change-Reason header. */
export function changeReason(
  request: Request,
  bodyReason: string | undefined,
): string | undefined {
  const header = request.headers['x-change-reason'];
  const reason =
    bodyReason ?? (typeof header === 'string' ? header : undefined);
  if (reason !== undefined && reason.length > MAX_REASON_LENGTH) {
    throw validationError([
      fieldError(
        'reason',
        'maxLength',
        `a reason has at most ${MAX_REASON_LENGTH} characters`,
      ),
    ]);
  }
  return reason;
}

function taskOf(scheduler: Scheduler): {type: TaskType; id: number} {
  if (scheduler.report_id) return {type: 'report', id: scheduler.report_id};
  if (scheduler.worker_id) return {type: 'worker', id: scheduler.worker_id};
  if (scheduler.reminder_id) {
    return {type: 'reminder', id: scheduler.reminder_id};
  }
  return {type: 'http', id: scheduler.http_target_id!};
}

/** POST /schedulers/{id}/run: run a scheduler's task once, now. */
@oas.tags('Scheduler')
@authenticate(...BEARER_STRATEGIES)
export class SchedulerRunController {
  constructor(
    @inject('repositories.SchedulerRepository')
    private readonly schedulers: EntityRepository<Scheduler>,
    @inject('services.BrokerService') private readonly broker: BrokerService,
    @inject(SecurityBindings.USER) private readonly user: CurrentUser,
    @inject(AppBindings.CONFIG) private readonly config: AppConfig,
    @inject(RestBindings.Http.REQUEST) private readonly request: Request,
    @inject(RestBindings.Http.RESPONSE) private readonly response: Response,
    @inject('repositories.CalendarRepository')
    private readonly calendars: EntityRepository<Calendar>,
    @inject(ProducerBindings.CLOCK, {optional: true})
    private readonly clock: () => Date = () => new Date(),
  ) {}

  @post('/schedulers/{id}/run', {
    summary: 'Run a scheduler now',
    description: `Claims a run with key manual-<uuid> and trigger manual, stores its message with it and publishes it on a confirm channel (202). Works on a paused scheduler (it runs once and stays paused); optional params replace the scheduler's for this run; a reason (at most ${MAX_REASON_LENGTH} characters, or the X-Change-Reason header) goes to the audit log. A stay-alive scheduler is 422. Roles: admin, operator.`,
    responses: {
      '202': {
        description: 'Claimed and published (or pending for the sweeper)',
        content: {
          'application/json': {
            schema: {
              type: 'object',
              title: 'RunNowResult',
              required: ['execution_id', 'execution_key', 'trigger', 'status'],
              properties: {
                execution_id: {type: 'integer'},
                execution_key: {type: 'string'},
                trigger: {type: 'string', enum: ['manual']},
                status: {
                  type: 'string',
                  enum: ['published', 'pending', 'skipped'],
                },
                reason: {
                  type: 'string',
                  description:
                    'Why it was skipped: the calendar that skips this minute',
                },
              },
            },
          },
        },
      },
    },
  })
  @oas.response(404, {description: 'No scheduler has this id'})
  @oas.response(503, {description: 'The broker is unavailable'})
  @authorize({allowedRoles: OPERATORS})
  async run(
    @idParam(Scheduler) id: number,
    @requestBody({
      required: false,
      content: {
        'application/json': {
          schema: {
            type: 'object',
            title: 'RunNowRequest',
            additionalProperties: false,
            properties: {
              params: {
                type: 'object',
                description: "Params for this run instead of the scheduler's",
              },
              reason: {type: 'string', maxLength: MAX_REASON_LENGTH},
              ignore_calendars: {
                type: 'boolean',
                description:
                  "Run even when the scheduler's calendars skip this minute (audited)",
              },
            },
          },
        },
      },
    })
    body: RunNowRequest | null = {},
  ): Promise<RunNowResult> {
    const result = await this.runNow(id, body ?? {});
    this.response.status(202);
    return result;
  }

  /** Claims, stores and publishes one manual run (also used by bulk actions). */
  async runNow(id: number, body: RunNowRequest): Promise<RunNowResult> {
    const reason = changeReason(this.request, body.reason);
    const scheduler = await this.schedulers.findById(id).catch(() => {
      throw schedulerNotFound(id);
    });
    if (scheduler.stay_alive) {
      throw validationError([
        fieldError(
          'stay_alive',
          'stayAlive',
          'a stay-alive scheduler runs continuously: it cannot be run once',
        ),
      ]);
    }
    const params = body.params ?? scheduler.params ?? {};
    const task = taskOf(scheduler);
    if (task.type === 'worker') {
      const problems = workerParamKeyProblems(params);
      if (problems.length > 0) {
        throw validationError(
          problems.map(p => fieldError('params', 'workerParamKey', p)),
        );
      }
    }
    // A broker that is down answers 503 before anything is stored.
    const publisher = await this.broker.taskPublisher();
    const message: TaskMessage = {
      ...task,
      scheduler_id: id,
      params_scheduler: JSON.stringify(params),
    };
    const executionKey = `manual-${randomUUID()}`;
    const sql = repositorySql(this.schedulers);
    const skip = body.ignore_calendars
      ? undefined
      : calendarVerdict(
          await compiledCalendars(this.calendars, scheduler.calendar_ids ?? []),
          calendar => calendarMatches(calendar, minuteSlot(this.clock())),
        );
    const changes: Record<string, unknown[]> = {
      execution_key: [null, executionKey],
    };
    if (body.ignore_calendars) changes.ignore_calendars = [null, true];
    if (skip) changes.skipped = [null, skip.reason];
    // One statement: the run (with its message, the outbox) and its audit event.
    const rows = (await sql(
      `WITH run AS (
         INSERT INTO scheduler_execution
           (scheduler_id, execution_key, container_id, payload, trigger,
            status, status_reason)
         VALUES ($1, $2, $3, $4::jsonb, 'manual',
                 CASE WHEN $8::text IS NULL THEN 'claimed' ELSE 'skipped' END, $8)
         RETURNING id
       ), audited AS (
         INSERT INTO audit_event (actor_user_id, action, entity, entity_id, reason, changes)
         SELECT $5, 'run', 'scheduler', $1::text, $6, $7::jsonb
           FROM run
       )
       SELECT id FROM run`,
      [
        id,
        executionKey,
        this.config.containerId,
        JSON.stringify(message),
        this.user.id,
        reason ?? null,
        JSON.stringify(changes),
        skip?.reason ?? null,
      ],
    ).catch(error => {
      // Deleted while this request waited for the broker to open.
      if (isMissingScheduler(error)) throw schedulerNotFound(id);
      throw error;
    })) as Array<{id: string | number}>;
    const executionId = Number(rows[0].id);
    if (skip) {
      return {
        execution_id: executionId,
        execution_key: executionKey,
        trigger: 'manual',
        status: 'skipped',
        reason: skip.reason,
      };
    }
    const confirmed = await publisher.publish([
      {executionId, executionKey, message},
    ]);
    if (confirmed.size > 0) {
      await markPublished(
        {query: (text, values) => sql(text, values ?? [])},
        confirmed,
      );
    }
    return {
      execution_id: executionId,
      execution_key: executionKey,
      trigger: 'manual',
      status: confirmed.has(executionId) ? 'published' : 'pending',
    };
  }
}
