/** The spec's task message: what the producer publishes and the consumer runs. */
export const TASK_TYPES = ['report', 'worker', 'reminder'] as const;
export type TaskType = (typeof TASK_TYPES)[number];

export interface TaskMessage {
  type: TaskType;
  /** Report, worker or reminder id. */
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
  params: Record<string, unknown> | null;
}

export function taskMessageFor(source: TaskSource): TaskMessage {
  const [type, id] =
    source.report_id !== null
      ? (['report', source.report_id] as const)
      : source.worker_id !== null
        ? (['worker', source.worker_id] as const)
        : (['reminder', source.reminder_id!] as const);
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
