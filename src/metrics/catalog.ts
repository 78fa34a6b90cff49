/**
 * Every metric the service exports besides prom-client's default process
 * metrics: one place for names, types, labels and help texts, so the
 * monitoring guide, the shipped dashboard and alert rules can be checked against it.
 * Names follow the Prometheus guides: one prefix, base units (seconds),
 * counters ending in `_total`, histograms for durations, labels with a
 * handful of values each (never ids, paths or users).
 */
export type MetricRole = 'producer' | 'consumer' | 'api' | 'stay_alive' | 'all';

export interface MetricDefinition {
  name: string;
  type: 'counter' | 'gauge' | 'histogram';
  help: string;
  labels: readonly string[];
  /** The role whose process exports it ('all': every role). */
  role: MetricRole;
  buckets?: readonly number[];
}

export const METRIC_PREFIX = 'task_scheduler_';

/** From a few milliseconds to the ten-minute task limit. */
const DURATION_BUCKETS = [
  0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300,
  600,
];
/** Seconds after the minute boundary: the promise is "on time". */
const LAG_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300];
/** API latency: milliseconds to a few seconds. */
const HTTP_BUCKETS = [
  0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
];

export const METRICS = {
  buildInfo: {
    name: 'task_scheduler_build_info',
    type: 'gauge',
    help: 'Always 1; the labels name the running version and commit.',
    labels: ['version', 'commit', 'role'],
    role: 'all',
  },
  producerTickDuration: {
    name: 'task_scheduler_producer_tick_duration_seconds',
    type: 'histogram',
    help: 'Time one producer tick took: evaluation, claims, publishes and sweep.',
    labels: [],
    role: 'producer',
    buckets: DURATION_BUCKETS,
  },
  producerLastTick: {
    name: 'task_scheduler_producer_last_tick_timestamp_seconds',
    type: 'gauge',
    help: 'Unix time when this producer last completed a tick (0 before the first).',
    labels: [],
    role: 'producer',
  },
  dispatchLag: {
    name: 'task_scheduler_dispatch_lag_seconds',
    type: 'histogram',
    help: "From a run's minute boundary (its slot) to the broker's publish confirm.",
    labels: ['trigger'],
    role: 'producer',
    buckets: LAG_BUCKETS,
  },
  claims: {
    name: 'task_scheduler_claims_total',
    type: 'counter',
    help: 'Due runs this producer tried to claim, by result.',
    labels: ['result'],
    role: 'producer',
  },
  publishes: {
    name: 'task_scheduler_publishes_total',
    type: 'counter',
    help: 'Task messages this producer published, by broker answer.',
    labels: ['result'],
    role: 'producer',
  },
  sweeps: {
    name: 'task_scheduler_sweeps_total',
    type: 'counter',
    help: 'Runs the sweeps handled: unconfirmed claims republished or skipped as older than the catch-up window; runs the lost-run sweep sent again, failed, skipped as older than the catch-up window, failed as left running with no outcome (failed_stuck), or left alone behind a backlog (deferred, counted each pass).',
    labels: ['result'],
    role: 'producer',
  },
  schedulers: {
    name: 'task_scheduler_schedulers',
    type: 'gauge',
    help: 'Schedulers in the database, by state (read at scrape time, cached a few seconds).',
    labels: ['state'],
    role: 'producer',
  },
  taskDuration: {
    name: 'task_scheduler_task_duration_seconds',
    type: 'histogram',
    help: 'Run time of one task attempt, by task type and outcome.',
    labels: ['type', 'outcome'],
    role: 'consumer',
    buckets: DURATION_BUCKETS,
  },
  taskQueueWait: {
    name: 'task_scheduler_task_queue_wait_seconds',
    type: 'histogram',
    help: "From a task message's publish to the start of its attempt.",
    labels: ['type'],
    role: 'consumer',
    buckets: LAG_BUCKETS,
  },
  taskRetries: {
    name: 'task_scheduler_task_retries_total',
    type: 'counter',
    help: 'Task attempts that failed and were sent to a retry tier, by type.',
    labels: ['type'],
    role: 'consumer',
  },
  taskFailures: {
    name: 'task_scheduler_task_failures_total',
    type: 'counter',
    help: 'Tasks that failed for good (sent to the failed queue), by type and reason.',
    labels: ['type', 'reason'],
    role: 'consumer',
  },
  tasksInProgress: {
    name: 'task_scheduler_tasks_in_progress',
    type: 'gauge',
    help: 'Task attempts this consumer is running now.',
    labels: [],
    role: 'consumer',
  },
  consumerLastTask: {
    name: 'task_scheduler_consumer_last_task_timestamp_seconds',
    type: 'gauge',
    help: 'Unix time when this consumer last finished a task attempt (0 before the first).',
    labels: [],
    role: 'consumer',
  },
  failedTasksStored: {
    name: 'task_scheduler_failed_tasks_stored',
    type: 'gauge',
    help: 'Failed tasks in the failed-task store (read at scrape time, cached a few seconds).',
    labels: [],
    role: 'consumer',
  },
  redrives: {
    name: 'task_scheduler_redrives_total',
    type: 'counter',
    help: 'Failed tasks re-driven through the API.',
    labels: [],
    role: 'api',
  },
  queueMessages: {
    name: 'task_scheduler_queue_messages',
    type: 'gauge',
    help: 'Messages in a queue of the topology (passive check at scrape time, cached a few seconds).',
    labels: ['queue'],
    role: 'consumer',
  },
  queueConsumers: {
    name: 'task_scheduler_queue_consumers',
    type: 'gauge',
    help: 'Consumers subscribed to a queue of the topology (as above).',
    labels: ['queue'],
    role: 'consumer',
  },
  httpDuration: {
    name: 'task_scheduler_http_request_duration_seconds',
    type: 'histogram',
    help: 'API request duration, by method, route template and status code.',
    labels: ['method', 'route', 'code'],
    role: 'api',
    buckets: HTTP_BUCKETS,
  },
  httpInFlight: {
    name: 'task_scheduler_http_requests_in_flight',
    type: 'gauge',
    help: 'API requests being answered now.',
    labels: [],
    role: 'api',
  },
  stayAliveWorkers: {
    name: 'task_scheduler_stay_alive_workers',
    type: 'gauge',
    help: 'Stay-alive worker processes this supervisor runs now.',
    labels: [],
    role: 'stay_alive',
  },
  stayAliveRestarts: {
    name: 'task_scheduler_stay_alive_restarts_total',
    type: 'counter',
    help: 'Restarts of stay-alive workers after they exited.',
    labels: [],
    role: 'stay_alive',
  },
} as const satisfies Record<string, MetricDefinition>;

export type MetricKey = keyof typeof METRICS;

/**
 * The names a scrape may show: each definition's, with a histogram's
 * `_bucket`, `_sum` and `_count` series.
 */
export function exportedSeriesNames(): string[] {
  return Object.values(METRICS).flatMap((metric: MetricDefinition) =>
    metric.type === 'histogram'
      ? [`${metric.name}_bucket`, `${metric.name}_sum`, `${metric.name}_count`]
      : [metric.name],
  );
}
