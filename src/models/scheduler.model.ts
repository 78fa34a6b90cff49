import {Entity, model, property} from '@loopback/repository';
import {
  booleanColumn,
  idColumn,
  idListColumn,
  jsonObjectColumn,
  referenceColumn,
  textColumn,
  timestampColumn,
} from './columns';

@model({
  name: 'Scheduler',
  settings: {
    strict: true,
    // Kept by the database for ?q= search; never shown or written.
    hiddenProperties: ['search_text'],
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
      jsonSchema: {enum: ['allow', 'skip'], nullable: false},
    }),
  )
  overlap_policy?: string;

  @property(
    idListColumn('calendar_ids', {
      description:
        'Calendars this scheduler follows (at most 100, as in the preview): a fire a blackout calendar matches, or that no allowed calendar matches, is skipped (never moved), with a skipped ledger row naming the calendar',
      // Every fire of a look ahead, a backfill or a catch-up may ask each
      // of them: 10,000 (the id lists' default) held an event loop for
      // tens of seconds.
      jsonSchema: {maxItems: 100},
    }),
  )
  calendar_ids?: number[];

  @property(
    timestampColumn('starts_at', {
      description:
        'Start of the active window: no fire before it (catch-up included); null = no start',
      jsonSchema: {nullable: true},
    }),
  )
  starts_at?: Date | string | null;

  @property(
    timestampColumn('ends_at', {
      description:
        'End of the active window: no fire after it; once passed, the scheduler turns inactive (audited). Must lie after starts_at; null = no end',
      jsonSchema: {nullable: true},
    }),
  )
  ends_at?: Date | string | null;

  @property(
    jsonObjectColumn('notify', {
      description:
        'Failure notices: {"on_failure": true, "on_recovery": true, "email": false, "group": false} by default. on_failure: the owner gets a web notification when a run is parked (at most one per FAILURE_NOTICE_INTERVAL, then a digest with the count); on_recovery: one notice after the first success; group: the members of group_id too; missed runs beyond the catch-up window give one notice per outage. email: every notice is also e-mailed to its recipients through the mail delivery of reports (SMTP_URL or the .eml outbox), retried with a bounded backoff.',
      jsonSchema: {
        type: 'object',
        additionalProperties: false,
        properties: {
          on_failure: {type: 'boolean'},
          on_recovery: {type: 'boolean'},
          email: {type: 'boolean'},
          group: {type: 'boolean'},
        },
      },
    }),
  )
  notify?: {
    on_failure?: boolean;
    on_recovery?: boolean;
    email?: boolean;
    group?: boolean;
  };

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
    referenceColumn('http_target_id', {
      description: 'HTTP target to call (HTTP scheduler)',
    }),
  )
  http_target_id?: number | null;

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

  @property(
    textColumn('search_text', {
      description: 'Generated by the database for the q search (hidden)',
    }),
  )
  search_text?: string;

  constructor(data?: Partial<Scheduler>) {
    super(data);
  }
}
