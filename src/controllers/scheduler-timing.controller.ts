import {authenticate} from '@loopback/authentication';
import {authorize} from '@loopback/authorization';
import {inject} from '@loopback/core';
import {get, HttpErrors, oas, param, post, requestBody} from '@loopback/rest';
import {EVERYONE} from '../auth/roles';
import type {AppConfig} from '../config';
import {idParam} from '../crud/crud-controller.factory';
import type {EntityRepository} from '../crud/repositories';
import {AppBindings, ProducerBindings} from '../keys';
import {Scheduler} from '../models';
import {compileCron} from '../scheduling/compiled-cron';
import {describeCron, describeOnce} from '../scheduling/describe-schedule';
import {upcomingRuns} from '../scheduling/upcoming-runs';
import {validationError} from '../validation/validation-error';
import {timingRuleErrors} from '../validation/scheduler-rules';

export const MAX_RUNS_LISTED = 100;
const DEFAULT_RUNS_LISTED = 10;

export interface UpcomingRuns {
  timezone: string;
  description: string;
  /** False for a paused scheduler: it has no upcoming runs until resumed. */
  active: boolean;
  runs: string[];
}

interface Timing {
  schedule?: string | null;
  date_time?: Date | string | null;
  timezone?: string | null;
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
      description: 'Upcoming runs, ISO 8601 UTC, within the next five years',
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
@authenticate('jwt')
@authorize({allowedRoles: EVERYONE})
export class SchedulerTimingController {
  constructor(
    @inject('repositories.SchedulerRepository')
    private readonly schedulers: EntityRepository<Scheduler>,
    @inject(AppBindings.CONFIG) private readonly config: AppConfig,
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
      throw new HttpErrors.NotFound(
        `Entity not found: Scheduler with id ${id}`,
      );
    });
    const listed = this.runsOf(scheduler, count);
    if (scheduler.stay_alive) {
      return {
        ...listed,
        description: 'Runs continuously (stay-alive)',
        runs: [],
      };
    }
    return scheduler.status ? listed : {...listed, active: false, runs: []};
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
    return {
      valid: true,
      ...this.runsOf(body, body.count ?? DEFAULT_RUNS_LISTED),
    };
  }

  private runsOf(timing: Timing, count: number): UpcomingRuns {
    const timezone = timing.timezone ?? this.config.cronTimeZone;
    const now = this.clock();
    if (timing.schedule) {
      return {
        timezone,
        active: true,
        description: describeCron(timing.schedule),
        runs: upcomingRuns(
          compileCron(timing.schedule),
          timezone,
          now,
          count,
        ).map(run => run.toISOString()),
      };
    }
    if (timing.date_time) {
      const at = new Date(timing.date_time);
      return {
        timezone,
        active: true,
        description: describeOnce(at),
        runs: at > now ? [at.toISOString()] : [],
      };
    }
    return {timezone, active: true, description: '', runs: []};
  }
}
