import type {Scheduler} from '@client/models/scheduler';

export type TaskKind = 'report' | 'worker' | 'reminder';

/** The task a scheduler runs, e.g. `Worker #2`. */
export function taskOf(scheduler: Scheduler): {kind: TaskKind; id: number} {
  if (scheduler.report_id) return {kind: 'report', id: scheduler.report_id};
  if (scheduler.worker_id) return {kind: 'worker', id: scheduler.worker_id};
  return {kind: 'reminder', id: scheduler.reminder_id ?? 0};
}

export function taskLabel(scheduler: Scheduler): string {
  const {kind, id} = taskOf(scheduler);
  const name = kind[0].toUpperCase() + kind.slice(1);
  return `${name} #${id}${scheduler.stay_alive ? ' (stay-alive)' : ''}`;
}
