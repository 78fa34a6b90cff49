import {Entity, model, property} from '@loopback/repository';
import {
  booleanColumn,
  idColumn,
  integerColumn,
  jsonObjectColumn,
  referenceColumn,
  textColumn,
  timestampColumn,
} from './columns';

/** One claimed run of a scheduler: the ledger row that makes a run unique. */
@model({
  name: 'SchedulerExecution',
  settings: {
    strict: true,
    postgresql: {schema: 'public', table: 'scheduler_execution'},
  },
})
export class SchedulerExecution extends Entity {
  @property(idColumn('bigint'))
  id?: number;

  @property(referenceColumn('scheduler_id', {required: true}))
  scheduler_id: number;

  @property(
    textColumn('execution_key', {
      required: true,
      description:
        'Deduplication key: cron-<year>-<month>-<day>-<hour>-<minute>',
    }),
  )
  execution_key: string;

  @property(
    timestampColumn('executed_at', {
      description: 'When the claim was written, by the database clock',
    }),
  )
  executed_at?: Date | string;

  @property(
    timestampColumn('slot', {
      description: 'The scheduled minute (UTC) this run is for',
      jsonSchema: {nullable: true},
    }),
  )
  slot?: Date | string | null;

  @property(
    textColumn('status', {
      description:
        'claimed, published, running, retrying, succeeded, failed or skipped (never sent: see status_reason)',
      jsonSchema: {nullable: false},
    }),
  )
  status?: string;

  @property(
    jsonObjectColumn('payload', {
      description:
        'The task message of a run an operator started (re-drive, queued report), stored with the run so the sweeper can publish exactly it (outbox); for a cron run, the message of a retry it waits for or of an attempt a shutdown interrupted (what the lost-run sweep sends again should the broker lose it); null otherwise',
      jsonSchema: {nullable: true},
    }),
  )
  payload?: Record<string, unknown> | null;

  @property(
    textColumn('status_reason', {
      description:
        'Why a run was skipped (its minute fell out of the catch-up window before it could be sent), or what the lost-run sweep did: sent it again, or failed it',
    }),
  )
  status_reason?: string | null;

  @property(
    timestampColumn('published_at', {
      description: "When the broker's confirm of the task message arrived",
      jsonSchema: {nullable: true},
    }),
  )
  published_at?: Date | string | null;

  @property(
    textColumn('container_id', {
      required: true,
      description: 'Producer instance that claimed it (host name plus pid)',
    }),
  )
  container_id: string;

  @property(
    integerColumn('attempts', {required: false, jsonSchema: {nullable: false}}),
  )
  attempts?: number;

  @property(timestampColumn('started_at', {jsonSchema: {nullable: true}}))
  started_at?: Date | string | null;

  @property(timestampColumn('finished_at', {jsonSchema: {nullable: true}}))
  finished_at?: Date | string | null;

  @property(integerColumn('duration_ms'))
  duration_ms?: number | null;

  @property(textColumn('last_error'))
  last_error?: string | null;

  @property(
    integerColumn('last_retry_count', {
      description:
        'Retry count of the delivery that started last (0 = first attempt); tells a duplicate message from the pending retry',
    }),
  )
  last_retry_count?: number | null;

  @property(
    booleanColumn('output_truncated', {
      required: false,
      description:
        'True when the run printed more than TASK_OUTPUT_MAX_BYTES and the rest was dropped',
    }),
  )
  output_truncated?: boolean;

  @property(
    integerColumn('unfinished_starts', {
      required: false,
      jsonSchema: {nullable: false},
      description:
        'Redelivered starts of the current attempt whose previous start had no outcome (its consumer died); at 2 the run is parked',
    }),
  )
  unfinished_starts?: number;

  @property(
    integerColumn('unfinished_retry_count', {
      description: 'The retry count that unfinished_starts counts for',
    }),
  )
  unfinished_retry_count?: number | null;

  @property(
    integerColumn('resent', {
      required: false,
      jsonSchema: {nullable: false},
      description:
        'Copies of the task message the lost-run sweep sent because the broker lost the one before (0 = none); only the newest copy may start the run',
    }),
  )
  resent?: number;

  @property(
    integerColumn('resent_confirmed', {
      required: false,
      jsonSchema: {nullable: false},
      description:
        'Of those copies, the ones the broker confirmed; after 3 a run lost again is failed',
    }),
  )
  resent_confirmed?: number;

  @property(
    timestampColumn('resent_at', {
      description:
        "When the lost-run sweep counted its last copy, by the database's clock",
      jsonSchema: {nullable: true},
    }),
  )
  resent_at?: Date | string | null;

  @property(
    integerColumn('http_status', {
      description:
        "HTTP tasks: the status code of the last attempt's answer (null when none came)",
    }),
  )
  http_status?: number | null;

  @property(
    textColumn('response_body', {
      description:
        "HTTP tasks: the first 8 KiB of the last attempt's response body, as text",
    }),
  )
  response_body?: string | null;

  constructor(data?: Partial<SchedulerExecution>) {
    super(data);
  }
}
