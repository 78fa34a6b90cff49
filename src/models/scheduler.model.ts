import {Entity, model, property} from '@loopback/repository';
import {
  booleanColumn,
  idColumn,
  jsonObjectColumn,
  referenceColumn,
  textColumn,
  timestampColumn,
} from './columns';

@model({
  name: 'Scheduler',
  settings: {
    strict: true,
    postgresql: {schema: 'public', table: 'scheduler'},
  },
})
export class Scheduler extends Entity {
  @property(idColumn())
  id?: number;

  @property(
    textColumn('description', {
      required: true,
      jsonSchema: {minLength: 1, maxLength: 1000},
    }),
  )
  description: string;

  @property(
    textColumn('schedule', {
      description:
        'Five-field cron expression (recurring schedulers), e.g. 0 6 * * 1-5',
      jsonSchema: {maxLength: 200},
    }),
  )
  schedule?: string | null;

  @property(
    timestampColumn('date_time', {
      description:
        'One-time execution moment, ISO 8601 with a zone offset (one-time schedulers)',
      jsonSchema: {nullable: true},
    }),
  )
  date_time?: Date | string | null;

  @property(
    textColumn('timezone', {
      description:
        'IANA time zone the schedule is read in (e.g. Europe/Berlin); null = CRON_TZ',
      jsonSchema: {maxLength: 64},
    }),
  )
  timezone?: string | null;

  @property(
    jsonObjectColumn('params', {description: 'Task-specific parameters'}),
  )
  params?: Record<string, unknown>;

  @property(
    booleanColumn('status', {description: 'true = active, false = inactive'}),
  )
  status?: boolean;

  @property(
    timestampColumn('activated_at', {
      description:
        'When it last became eligible to fire (created, resumed, or given a new schedule, timezone or date_time); a recurring scheduler never fires for an earlier minute',
    }),
  )
  activated_at?: Date | string;

  @property(
    textColumn('status_reason', {
      description:
        'Why the service switched the scheduler off (e.g. a one-time run sent or missed); cleared when status changes',
    }),
  )
  status_reason?: string | null;

  @property(
    textColumn('overlap_policy', {
      description:
        'allow (default): every due run is published; skip: a due run is not published while an earlier run of this scheduler is claimed, published, running or retrying (its ledger row says skipped, and why)',
      jsonSchema: {enum: ['allow', 'skip']},
    }),
  )
  overlap_policy?: string;

  @property(
    booleanColumn('stay_alive', {
      description: 'Long-running worker, run by the stay-alive supervisor',
    }),
  )
  stay_alive?: boolean;

  @property(referenceColumn('report_id'))
  report_id?: number | null;

  @property(referenceColumn('worker_id'))
  worker_id?: number | null;

  @property(referenceColumn('reminder_id'))
  reminder_id?: number | null;

  @property(
    referenceColumn('user_id', {description: 'User who created the scheduler'}),
  )
  user_id?: number | null;

  @property(referenceColumn('group_id'))
  group_id?: number | null;

  @property(referenceColumn('language_id'))
  language_id?: number | null;

  @property(timestampColumn('created_at'))
  created_at?: Date | string;

  @property(timestampColumn('updated_at'))
  updated_at?: Date | string;

  constructor(data?: Partial<Scheduler>) {
    super(data);
  }
}
