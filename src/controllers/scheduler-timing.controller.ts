import {authenticate} from '@loopback/authentication';
import {BEARER_STRATEGIES} from '../auth/bearer-strategies';
import {authorize} from '@loopback/authorization';
import {inject} from '@loopback/core';
import {
  get,
  oas,
  param,
  post,
  requestBody,
  Response,
  RestBindings,
} from '@loopback/rest';
import {EVERYONE} from '../auth/roles';
import type {AppConfig} from '../config';
import {idParam} from '../crud/crud-controller.factory';
import type {EntityRepository} from '../crud/repositories';
import {AppBindings, ProducerBindings} from '../keys';
import {Calendar, Scheduler} from '../models';
import {compiledCalendars} from '../calendars/compiled-calendars';
import {compileCron} from '../scheduling/compiled-cron';
import {describeCron, describeOnce} from '../scheduling/describe-schedule';
import type {CompiledCalendar} from '../scheduling/calendar-match';
import {oneTimeFire} from '../scheduling/one-time-fire';
import {
  PlannedFires,
  plannedFires,
  stopReason,
} from '../scheduling/planned-fires';
import {instantOrNull} from '../scheduling/slots';
import {isValidTimeZone} from '../scheduling/wall-clock';
import {fieldError, validationError} from '../validation/validation-error';
import {timingRuleErrors} from '../validation/scheduler-rules';
import {schedulerNotFound} from '../database/missing-scheduler';
import {clientGoneSignal} from '../process/client-gone';

export const MAX_RUNS_LISTED = 100;
const DEFAULT_RUNS_LISTED = 10;

export interface SkippedRun {
  at: string;
  calendar_id: number;
  calendar_name: string;
  reason: string;
}

export interface UpcomingRuns {
  timezone: string;
  description: string;
  /** False for a paused scheduler: it has no upcoming runs until resumed. */
  active: boolean;
  runs: string[];
  /** Fires its calendars skip, up to the last listed run. */
  skipped: SkippedRun[];
  /** Set when the look ahead stopped early: why, and that later runs may exist. */
  incomplete?: string;
}

interface Timing {
  schedule?: string | null;
  date_time?: Date | string | null;
  timezone?: string | null;
  calendar_ids?: number[] | null;
  starts_at?: Date | string | null;
  ends_at?: Date | string | null;
}

const RUNS_SCHEMA = {
  type: 'object',
  required: ['timezone', 'description', 'runs'],
  properties: {
    valid: {type: 'boolean', description: 'Always true in a 200 (preview)'},
    timezone: {type: 'string', description: 'The IANA zone the runs follow'},
    description: {type: 'string', description: 'The schedule in English'},
    active: {
      type: 'boolean',
      description: 'False for a paused scheduler, whose runs list is empty',
    },
    runs: {
      type: 'array',
      items: {type: 'string', format: 'date-time'},
      description:
        'Upcoming runs that will fire, ISO 8601 UTC, within the next five years and the active window',
    },
    incomplete: {
      type: 'string',
      description:
        'Present when the look ahead stopped before listing `count` runs or reaching five years or the active window end: at its most fires (5,000, fewer with many calendars), after 1 s of its own work, or after 5 s in all when the API is busy. Says how many fires it looked at; runs after them may exist',
    },
    skipped: {
      type: 'array',
      description:
        'Fires the calendars skip (never moved), up to the last listed run or the last fire looked at, each with the calendar that skips it',
      items: {
        type: 'object',
        title: 'SkippedRun',
        required: ['at', 'calendar_id', 'calendar_name', 'reason'],
        properties: {
          at: {type: 'string', format: 'date-time'},
          calendar_id: {type: 'integer'},
          calendar_name: {type: 'string'},
          reason: {type: 'string'},
        },
      },
    },
  },
};

const COUNT_PARAM = {
  schema: {
    type: 'integer' as const,
    minimum: 1,
    maximum: MAX_RUNS_LISTED,
    default: DEFAULT_RUNS_LISTED,
  },
  description: `How many runs (1-${MAX_RUNS_LISTED}, default ${DEFAULT_RUNS_LISTED})`,
};

/**
 * Upcoming runs and the schedule in words, from the producer's own matcher
 * and DST rules: for a stored scheduler, and for one being typed (preview).
 */
@oas.tags('Scheduler')
@authenticate(...BEARER_STRATEGIES)
@authorize({allowedRoles: EVERYONE})
export class SchedulerTimingController {
  constructor(
    @inject('repositories.SchedulerRepository')
    private readonly schedulers: EntityRepository<Scheduler>,
    @inject('repositories.CalendarRepository')
    private readonly calendars: EntityRepository<Calendar>,
    @inject(AppBindings.CONFIG) private readonly config: AppConfig,
    @inject(RestBindings.Http.RESPONSE) private readonly response: Response,
    @inject(ProducerBindings.CLOCK, {optional: true})
    private readonly clock: () => Date = () => new Date(),
  ) {}

  @get('/schedulers/{id}/next-runs', {
    summary: "A scheduler's next runs, and its schedule in words",
    description: `The next runs (ISO 8601 UTC) as the producer would fire them in the scheduler's zone, DST included: a one-time scheduler lists its date_time while it lies ahead; a stay-alive or paused one lists none. Looks at most five years ahead. Roles: admin, operator, viewer.`,
    responses: {
      '200': {
        description: 'Upcoming runs',
        content: {
          'application/json': {schema: {...RUNS_SCHEMA, title: 'NextRuns'}},
        },
      },
    },
  })
  @oas.response(404, {description: 'No scheduler has this id'})
  async nextRuns(
    @idParam(Scheduler) id: number,
    @param.query.integer('count', COUNT_PARAM) count = DEFAULT_RUNS_LISTED,
  ): Promise<UpcomingRuns> {
    const scheduler = await this.schedulers.findById(id).catch(() => {
      throw schedulerNotFound(id);
    });
    // A paused or stay-alive scheduler lists no runs: its zone and words
    // only, without a look ahead (up to a second with calendars).
    const firing = scheduler.status && !scheduler.stay_alive;
    const listed = await this.runsOf(scheduler, firing ? count : 0);
    if (scheduler.stay_alive) {
      return {
        ...listed,
        description: 'Runs continuously (stay-alive)',
        runs: [],
        skipped: [],
      };
    }
    return scheduler.status
      ? listed
      : {...listed, active: false, runs: [], skipped: []};
  }

  @post('/schedulers/preview', {
    summary: 'Preview a schedule while it is typed',
    description:
      'The schedule in words and its next runs, for a cron `schedule` or a one-time `date_time` (exactly one) in `timezone` (default CRON_TZ). Invalid input is a 422 with the same details as creating a scheduler. Roles: admin, operator, viewer.',
    responses: {
      '200': {
        description: 'The schedule is valid',
        content: {
          'application/json': {
            schema: {...RUNS_SCHEMA, title: 'SchedulePreview'},
          },
        },
      },
    },
  })
  async preview(
    @requestBody({
      required: true,
      content: {
        'application/json': {
          schema: {
            type: 'object',
            title: 'SchedulePreviewRequest',
            additionalProperties: false,
            properties: {
              schedule: {type: 'string', minLength: 1, maxLength: 200},
              date_time: {type: 'string', format: 'date-time'},
              timezone: {type: 'string', minLength: 1, maxLength: 100},
              calendar_ids: {
                type: 'array',
                items: {type: 'integer', minimum: 1, maximum: 2147483647},
                maxItems: 100,
                description: 'Calendars to judge the runs by',
              },
              starts_at: {type: 'string', format: 'date-time'},
              ends_at: {type: 'string', format: 'date-time'},
              count: {type: 'integer', minimum: 1, maximum: MAX_RUNS_LISTED},
            },
          },
        },
      },
    })
    body: Timing & {count?: number},
  ): Promise<UpcomingRuns & {valid: true}> {
    const errors = timingRuleErrors(body);
    if (errors.length > 0) throw validationError(errors);
    const calendars = await this.calendarsOf(body.calendar_ids ?? []);
    const missing = (body.calendar_ids ?? []).filter(
      id => !calendars.some(calendar => calendar.id === id),
    );
    if (missing.length > 0) {
      throw validationError([
        fieldError(
          'calendar_ids',
          'notFound',
          `Calendar ${missing.join(', ')} does not exist`,
        ),
      ]);
    }
    return {
      valid: true,
      ...(await this.runsOf(
        body,
        body.count ?? DEFAULT_RUNS_LISTED,
        calendars,
      )),
    };
  }

  private calendarsOf(ids: number[]): Promise<CompiledCalendar[]> {
    return compiledCalendars(this.calendars, ids);
  }

  private async runsOf(
    timing: Timing,
    count: number,
    known?: CompiledCalendar[],
  ): Promise<UpcomingRuns> {
    const timezone = timing.timezone ?? this.config.cronTimeZone;
    const now = this.clock();
    const calendars =
      known ?? (await this.calendarsOf(timing.calendar_ids ?? []));
    const startsAt = instantOrNull(timing.starts_at);
    const endsAt = instantOrNull(timing.ends_at);
    // A zone the producer cannot read (a row written around the API): it
    // never fires a recurring schedule there, so none is listed.
    if (timing.schedule && !isValidTimeZone(timezone))
      return {
        timezone,
        active: true,
        description: describeCron(timing.schedule),
        runs: [],
        skipped: [],
      };
    if (timing.schedule) {
      const plan = await plannedFires(
        compileCron(timing.schedule),
        timezone,
        now,
        count,
        // A client that left stops the look ahead: nobody reads its answer.
        {calendars, startsAt, endsAt, signal: clientGoneSignal(this.response)},
      );
      return {
        timezone,
        active: true,
        description: describeCron(timing.schedule),
        ...(plan.stoppedBy ? {incomplete: incompleteNote(plan)} : {}),
        runs: plan.runs.map(run => run.toISOString()),
        skipped: plan.skipped.map(skip => ({
          at: skip.at.toISOString(),
          calendar_id: skip.calendarId,
          calendar_name: skip.calendarName,
          reason: skip.reason,
        })),
      };
    }
    if (timing.date_time) {
      const at = new Date(timing.date_time);
      // As the producer fires it: at the tick of its minute, or the next
      // one within the catch-up window (the rule that accepts a date_time);
      // and only inside the active window.
      const fire = oneTimeFire(at, now, {
        catchUpMinutes: this.config.cronCatchUpMinutes,
        startsAt,
        endsAt,
        calendars,
      });
      const ahead = fire.ahead;
      const skip = fire.ahead ? fire.skip : undefined;
      return {
        timezone,
        active: true,
        description: describeOnce(at),
        runs: ahead && !skip ? [at.toISOString()] : [],
        skipped:
          ahead && skip
            ? [
                {
                  at: at.toISOString(),
                  calendar_id: skip.calendarId,
                  calendar_name: skip.calendarName,
                  reason: skip.reason,
                },
              ]
            : [],
      };
    }
    return {timezone, active: true, description: '', runs: [], skipped: []};
  }
}

/** Why a look ahead listed fewer runs than asked for, and what that means. */
function incompleteNote(plan: PlannedFires): string {
  return `the look ahead stopped after ${plan.considered} fires because ${stopReason(plan.stoppedBy)}: later runs may exist`;
}
