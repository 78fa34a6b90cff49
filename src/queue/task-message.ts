import {textOf} from '../logging/bounded-text';
import {workerParamKeyProblems} from '../executors/worker-params';
/** The spec's task message: what the producer publishes and the consumer runs. */
export const TASK_TYPES = ['report', 'worker', 'reminder', 'http'] as const;
export type TaskType = (typeof TASK_TYPES)[number];

export interface TaskMessage {
  type: TaskType;
  /** Report, worker, reminder or HTTP target id. */
  id: number;
  scheduler_id: number;
  /** JSON-encoded scheduler params. */
  params_scheduler: string;
}

/** The scheduler columns a task message is built from. */
export interface TaskSource {
  scheduler_id: number;
  report_id: number | null;
  worker_id: number | null;
  reminder_id: number | null;
  http_target_id?: number | null;
  params: Record<string, unknown> | null;
}

export function taskMessageFor(source: TaskSource): TaskMessage {
  const [type, id] =
    source.report_id !== null
      ? (['report', source.report_id] as const)
      : source.worker_id !== null
        ? (['worker', source.worker_id] as const)
        : source.reminder_id !== null
          ? (['reminder', source.reminder_id] as const)
          : (['http', source.http_target_id!] as const);
  return {
    type,
    id,
    scheduler_id: source.scheduler_id,
    params_scheduler: JSON.stringify(source.params ?? {}),
  };
}

export function encodeTaskMessage(message: TaskMessage): Buffer {
  return Buffer.from(JSON.stringify(message));
}

/** A message that can never run: it goes to the failed queue, never retried. */
export class PoisonMessageError extends Error {
  override name = 'PoisonMessageError';
}

/** PostgreSQL's integer: the ids of schedulers and tasks are of that type. */
const INT4_MAX = 2_147_483_647;

/**
 * A positive id PostgreSQL's integer holds: a larger one failed every
 * statement that named it ("out of range"), and the message was requeued
 * for ever instead of parked.
 */
const isPositiveInteger = (value: unknown): value is number =>
  Number.isInteger(value) &&
  (value as number) > 0 &&
  (value as number) <= INT4_MAX;

/** Checks a delivered body against the task message contract. */
export function parseTaskMessage(content: Buffer): TaskMessage {
  let body: unknown;
  try {
    body = JSON.parse(content.toString('utf8'));
  } catch {
    throw new PoisonMessageError('message body is not valid JSON');
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new PoisonMessageError('message body is not a JSON object');
  }
  const message = body as Record<string, unknown>;
  if (!TASK_TYPES.includes(message.type as TaskType)) {
    throw new PoisonMessageError(
      // Bounded: a type of megabytes, or nested too deep to write as JSON,
      // must not become the reason (or throw while it is written).
      `unknown task type ${textOf(message.type, 100, true) ?? 'undefined'}; expected one of ${TASK_TYPES.join(', ')}`,
    );
  }
  if (!isPositiveInteger(message.id)) {
    throw new PoisonMessageError(
      'message lacks a positive integer "id" (1 to 2147483647)',
    );
  }
  if (!isPositiveInteger(message.scheduler_id)) {
    throw new PoisonMessageError(
      'message lacks a positive integer "scheduler_id" (1 to 2147483647)',
    );
  }
  const params = message.params_scheduler ?? '{}';
  if (typeof params !== 'string') {
    throw new PoisonMessageError('"params_scheduler" must be a JSON string');
  }
  try {
    const parsed = JSON.parse(params);
    if (
      typeof parsed !== 'object' ||
      parsed === null ||
      Array.isArray(parsed)
    ) {
      throw new Error('not an object');
    }
  } catch {
    throw new PoisonMessageError(
      '"params_scheduler" is not a JSON object string',
    );
  }
  if (message.type === 'worker') {
    const problems = workerParamKeyProblems(JSON.parse(params));
    if (problems.length > 0) throw new PoisonMessageError(problems.join('; '));
  }
  return {
    type: message.type as TaskType,
    id: message.id,
    scheduler_id: message.scheduler_id,
    params_scheduler: params,
  };
}

export function schedulerParamsOf(
  message: TaskMessage,
): Record<string, unknown> {
  return JSON.parse(message.params_scheduler) as Record<string, unknown>;
}
