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
import {AppBindings, ProducerBindings} from '../keys';
import {compiledCalendars} from '../calendars/compiled-calendars';
import {Calendar, Scheduler} from '../models';
import {BrokerService} from '../queue/broker.service';
import {taskMessageFor} from '../queue/task-message';
import {compileCron} from '../scheduling/compiled-cron';
import {executionKey} from '../scheduling/execution-key';
import {slotVerdicts} from '../scheduling/slot-verdicts';
import {TurnSharer} from '../process/turn-sharer';
import {clientGoneSignal} from '../process/client-gone';
import {instantOrNull, MINUTE_MS} from '../scheduling/slots';
import {upcomingRuns} from '../scheduling/upcoming-runs';
import {fieldError, validationError} from '../validation/validation-error';
import {changeReason} from './scheduler-run.controller';

export const MAX_BACKFILL_SLOTS = 1000;

interface SkippedSlot {
  at: string;
  calendar_id: number;
  calendar_name: string;
  reason: string;
}

interface BackfillBody {
  from: string;
  to: string;
  dry_run?: boolean;
  reason?: string;
}

/** POST /schedulers/{id}/backfill: run the slots a recurring scheduler missed. */
@oas.tags('Scheduler')
@authenticate(...BEARER_STRATEGIES)
export class SchedulerBackfillController {
  constructor(
    @inject('repositories.SchedulerRepository')
    private readonly schedulers: EntityRepository<Scheduler>,
    @inject('services.BrokerService') private readonly broker: BrokerService,
    @inject('repositories.CalendarRepository')
    private readonly calendars: EntityRepository<Calendar>,
    @inject(SecurityBindings.USER) private readonly user: CurrentUser,
    @inject(AppBindings.CONFIG) private readonly config: AppConfig,
    @inject(RestBindings.Http.REQUEST) private readonly request: Request,
    @inject(RestBindings.Http.RESPONSE) private readonly response: Response,
    @inject(ProducerBindings.CLOCK, {optional: true})
    private readonly clock: () => Date = () => new Date(),
  ) {}

  @post('/schedulers/{id}/backfill', {
    summary: 'Backfill the slots of a time range',
    description: `The slots of [from, to] at which a recurring scheduler fires (the producer's rule, in its zone and inside its active window; at most ${MAX_BACKFILL_SLOTS}, and not in the future). Slots the scheduler's calendars skip are never run: the dry run lists them under skipped (with the calendar); a real backfill ledgers them as skipped with the reason and counts them in skipped. With dry_run: 200 {slots, count, skipped}. Otherwise each slot is claimed with the scheduled run's own key cron-<y>-<m>-<d>-<h>-<min> and trigger backfill (a slot that already ran is not run again), published, and audited: 202 {claimed, already_claimed}. Roles: admin, operator.`,
    responses: {
      '200': {
        description: 'Dry run: the slots that would be claimed',
        content: {
          'application/json': {
            schema: {
              type: 'object',
              title: 'BackfillPlan',
              properties: {
                slots: {
                  type: 'array',
                  items: {type: 'string', format: 'date-time'},
                },
                count: {type: 'integer'},
                skipped: {
                  type: 'array',
                  description: 'Slots the calendars skip, with the calendar',
                  items: {
                    type: 'object',
                    title: 'BackfillSkippedSlot',
                    properties: {
                      at: {type: 'string', format: 'date-time'},
                      calendar_id: {type: 'integer'},
                      calendar_name: {type: 'string'},
                      reason: {type: 'string'},
                    },
                  },
                },
              },
            },
          },
        },
      },
      '202': {
        description: 'Claimed and published',
        content: {
          'application/json': {
            schema: {
              type: 'object',
              title: 'BackfillResult',
              properties: {
                claimed: {type: 'integer'},
                already_claimed: {type: 'integer'},
                published: {type: 'integer'},
                skipped: {
                  type: 'integer',
                  description:
                    'Slots ledgered as skipped because a calendar skips them',
                },
              },
            },
          },
        },
      },
    },
  })
  @oas.response(404, {description: 'No scheduler has this id'})
  @authorize({allowedRoles: OPERATORS})
  async backfill(
    @idParam(Scheduler) id: number,
    @requestBody({
      required: true,
      content: {
        'application/json': {
          schema: {
            type: 'object',
            title: 'BackfillRequest',
            additionalProperties: false,
            required: ['from', 'to'],
            properties: {
              from: {type: 'string', format: 'date-time'},
              to: {type: 'string', format: 'date-time'},
              dry_run: {type: 'boolean'},
              reason: {type: 'string', maxLength: MAX_REASON_LENGTH},
            },
          },
        },
      },
    })
    body: BackfillBody,
  ): Promise<
    | {slots: string[]; count: number; skipped: SkippedSlot[]}
    | {
        claimed: number;
        already_claimed: number;
        published: number;
        skipped: number;
      }
  > {
    const reason = changeReason(this.request, body.reason);
    const scheduler = await this.schedulers.findById(id).catch(() => {
      throw schedulerNotFound(id);
    });
    const slots = this.slotsOf(scheduler, body);
    const calendars = await compiledCalendars(
      this.calendars,
      scheduler.calendar_ids ?? [],
    );
    // A client that left stops the verdicts: nothing is written before them.
    const skips = await slotVerdicts(
      calendars,
      slots,
      TurnSharer.until(clientGoneSignal(this.response)),
    );
    if (body.dry_run) {
      const toRun = slots.filter((_, i) => !skips[i]);
      return {
        slots: toRun.map(slot => slot.toISOString()),
        count: toRun.length,
        skipped: slots.flatMap((slot, i) => {
          const skip = skips[i];
          return skip
            ? [
                {
                  at: slot.toISOString(),
                  calendar_id: skip.calendarId,
                  calendar_name: skip.calendarName,
                  reason: skip.reason,
                },
              ]
            : [];
        }),
      };
    }
    if (slots.length === 0) {
      // Nothing of the range can run (its window lies elsewhere): no claim,
      // no broker, no audit event of a backfill that did nothing.
      this.response.status(202);
      return {claimed: 0, already_claimed: 0, published: 0, skipped: 0};
    }
    const publisher = await this.broker.taskPublisher();
    const message = taskMessageFor({
      scheduler_id: id,
      report_id: scheduler.report_id ?? null,
      worker_id: scheduler.worker_id ?? null,
      reminder_id: scheduler.reminder_id ?? null,
      http_target_id: scheduler.http_target_id ?? null,
      params: scheduler.params ?? {},
    });
    const sql = repositorySql(this.schedulers);
    // One statement: the claims (with their message: the outbox) and the audit event.
    const claimed = (await sql(
      `WITH claimed AS (
         INSERT INTO scheduler_execution
           (scheduler_id, execution_key, slot, executed_at, container_id, payload, trigger,
            status, status_reason)
         SELECT $1, w.key, w.slot, clock_timestamp(), $4, $5::jsonb, 'backfill',
                CASE WHEN w.skip IS NULL THEN 'claimed' ELSE 'skipped' END, w.skip
           FROM unnest($2::text[], $3::timestamptz[], $10::text[]) AS w(key, slot, skip)
         ON CONFLICT (scheduler_id, execution_key) DO NOTHING
         RETURNING id, execution_key, status
       ), audited AS (
         INSERT INTO audit_event (actor_user_id, action, entity, entity_id, reason, changes)
         SELECT $6, 'backfill', 'scheduler', $1::text, $7,
                jsonb_build_object('range', jsonb_build_array(NULL, jsonb_build_array($8::text, $9::text)),
                                   'claimed', jsonb_build_array(NULL, (SELECT count(*) FROM claimed)))
       )
       SELECT id, execution_key, status FROM claimed`,
      [
        id,
        slots.map(executionKey),
        slots,
        this.config.containerId,
        JSON.stringify(message),
        this.user.id,
        reason ?? null,
        body.from,
        body.to,
        skips.map(skip => skip?.reason ?? null),
      ],
    ).catch(error => {
      // Deleted while its slots were judged (seconds with many calendars).
      if (isMissingScheduler(error)) throw schedulerNotFound(id);
      throw error;
    })) as Array<{id: string | number; execution_key: string; status: string}>;
    const toSend = claimed.filter(row => row.status !== 'skipped');
    const confirmed = await publisher.publish(
      toSend.map(row => ({
        executionId: Number(row.id),
        executionKey: row.execution_key,
        message,
      })),
    );
    if (confirmed.size > 0) {
      await markPublished(
        {query: (text, values) => sql(text, values ?? [])},
        confirmed,
      );
    }
    this.response.status(202);
    return {
      claimed: toSend.length,
      already_claimed: slots.length - claimed.length,
      published: confirmed.size,
      skipped: claimed.length - toSend.length,
    };
  }

  /** The scheduler's slots in [from, to], checked against the rules. */
  private slotsOf(scheduler: Scheduler, body: BackfillBody): Date[] {
    const from = new Date(body.from);
    const to = new Date(body.to);
    const errors: ReturnType<typeof fieldError>[] = [];
    if (!scheduler.schedule || scheduler.stay_alive) {
      errors.push(
        fieldError(
          'schedule',
          'recurringOnly',
          'only a recurring (cron) scheduler can be backfilled',
        ),
      );
    }
    if (!(from.getTime() <= to.getTime())) {
      errors.push(fieldError('from', 'range', 'from must not be after to'));
    }
    if (to.getTime() > this.clock().getTime()) {
      errors.push(
        fieldError(
          'to',
          'future',
          'to must not be in the future: backfill runs past slots',
        ),
      );
    }
    if (errors.length > 0) throw validationError(errors);
    // The producer's window rule: no slot before starts_at nor after ends_at
    // (a slot exactly at either fires). The range is cut to it before the
    // slots are listed, so the slot cap counts only slots that can run.
    // Activation is not applied: backfill is for minutes a scheduler missed.
    const first = Math.max(
      from.getTime(),
      instantOrNull(scheduler.starts_at)?.getTime() ?? -Infinity,
    );
    const last = Math.min(
      to.getTime(),
      instantOrNull(scheduler.ends_at)?.getTime() ?? Infinity,
    );
    if (first > last) return [];
    const days = Math.ceil((last - first) / (1440 * MINUTE_MS)) + 1;
    // The listing starts at the minute holding `first`: a starts_at or from
    // inside a minute leaves that minute's slot out, as the producer does.
    const slots = upcomingRuns(
      compileCron(scheduler.schedule!),
      scheduler.timezone ?? this.config.cronTimeZone,
      new Date(first - MINUTE_MS),
      MAX_BACKFILL_SLOTS + 1,
      days,
    ).filter(slot => slot.getTime() >= first && slot.getTime() <= last);
    if (slots.length > MAX_BACKFILL_SLOTS) {
      throw validationError([
        fieldError(
          'to',
          'tooManySlots',
          `the range holds more than ${MAX_BACKFILL_SLOTS} slots; backfill it in parts`,
        ),
      ]);
    }
    return slots;
  }
}
