import {
  collectDefaultMetrics,
  Counter,
  Gauge,
  Histogram,
  Registry,
} from 'prom-client';
import {MetricDefinition, MetricKey, MetricRole, METRICS} from './catalog';
import {FAILURE_REASONS} from './failure-reason';

type MetricOf<K extends MetricKey> =
  (typeof METRICS)[K]['type'] extends 'counter'
    ? Counter<string>
    : (typeof METRICS)[K]['type'] extends 'gauge'
      ? Gauge<string>
      : Histogram<string>;

export type Labels = Record<string, string>;

export interface BuildInfo {
  version: string;
  commit?: string;
}

/** Label values known up front: their series are exported at 0 from the start. */
export const KNOWN_LABELS = {
  claimResults: ['claimed', 'already_claimed', 'skipped'],
  publishResults: ['confirmed', 'returned', 'failed'],
  sweepResults: [
    'republished',
    'skipped_stale',
    'resent_lost',
    'failed_lost',
    'skipped_lost',
    'failed_stuck',
    'deferred_lost',
  ],
  schedulerStates: ['active', 'inactive', 'stay_alive'],
  // A tick's own publish, or the sweeper's republish of an unconfirmed claim.
  triggers: ['cron', 'sweep'],
  taskTypes: ['report', 'worker', 'reminder', 'http'],
  outcomes: ['succeeded', 'retry', 'failed', 'timeout'],
} as const;

/**
 * The metrics of one process (one per application, so tests that start
 * several apps in one process never share counters). Only the roles the
 * process runs are registered: a worker exports no producer gauges that
 * would read 0 forever.
 */
export class Metrics {
  readonly registry = new Registry();
  private readonly made = new Map<MetricKey, Counter | Gauge | Histogram>();
  private readonly collectors = new Map<MetricKey, () => Promise<void>>();
  private rendering?: Promise<{contentType: string; body: string}>;

  constructor(
    readonly roles: ReadonlySet<Exclude<MetricRole, 'all'>>,
    build: BuildInfo,
    /** A scrape-time read slower than this keeps the last values. */
    private readonly scrapeReadTimeoutMs = SCRAPE_READ_TIMEOUT_MS,
  ) {
    // Unprefixed: process_cpu_seconds_total and friends are what dashboards expect.
    collectDefaultMetrics({register: this.registry});
    for (const key of Object.keys(METRICS) as MetricKey[]) {
      const definition: MetricDefinition = METRICS[key];
      if (definition.role !== 'all' && !roles.has(definition.role)) continue;
      this.made.set(
        key,
        create(definition, this.registry, () => this.collectors.get(key)?.()),
      );
    }
    for (const role of roles) {
      this.get('buildInfo').set(
        {version: build.version, commit: build.commit ?? 'unknown', role},
        1,
      );
    }
    this.exportKnownSeries();
  }

  /** The metric, or undefined when this process does not run its role. */
  get<K extends MetricKey>(key: K): MetricOf<K> {
    return this.made.get(key) as MetricOf<K>;
  }

  has(key: MetricKey): boolean {
    return this.made.has(key);
  }

  /** Adds to a counter (or gauge); nothing when this role's metric is absent. */
  count(key: MetricKey, labels: Labels = {}, by = 1): void {
    const metric = this.made.get(key) as Counter | Gauge | undefined;
    metric?.inc(labels, by);
  }

  /** Records a histogram observation, in seconds. */
  observe(key: MetricKey, labels: Labels, seconds: number): void {
    (this.made.get(key) as Histogram | undefined)?.observe(labels, seconds);
  }

  set(key: MetricKey, labels: Labels, value: number): void {
    (this.made.get(key) as Gauge | undefined)?.set(labels, value);
  }

  /**
   * Sets a gauge's values at scrape time (queue depths, stored failures);
   * a failed read keeps the last values and is reported to `onError`.
   * Readers that ask a dependency should be `cached` (see below).
   */
  onScrape(
    key: MetricKey,
    read: (gauge: Gauge) => Promise<void>,
    onError: (error: Error) => void,
  ): void {
    const gauge = this.made.get(key) as Gauge | undefined;
    if (!gauge) return;
    this.collectors.set(key, () =>
      withinScrapeTime(read(gauge), this.scrapeReadTimeoutMs).catch(onError),
    );
  }

  /**
   * The Prometheus text exposition of every metric. Scrapes that arrive
   * while one is being rendered share it: rendering costs milliseconds of
   * the event loop the producer and consumer also run on, so a hundred
   * parallel scrapes (or a flood on the unauthenticated HEALTH_PORT) cost
   * one render, one round of scrape-time reads and at most one warning each.
   */
  text(): Promise<{contentType: string; body: string}> {
    this.rendering ??= this.registry
      .metrics()
      .then(body => ({contentType: this.registry.contentType, body}))
      .finally(() => {
        this.rendering = undefined;
      });
    return this.rendering;
  }

  private exportKnownSeries(): void {
    const zero = <K extends MetricKey>(
      key: K,
      labelSets: Array<Record<string, string>>,
    ) => {
      const metric = this.made.get(key);
      if (!metric) return;
      for (const labels of labelSets) {
        if (metric instanceof Histogram) metric.zero(labels);
        else if (metric instanceof Counter) metric.inc(labels, 0);
        else metric.set(labels, 0);
      }
    };
    const each = <T extends string>(label: string, values: readonly T[]) =>
      values.map(value => ({[label]: value}));
    zero('claims', each('result', KNOWN_LABELS.claimResults));
    zero('publishes', each('result', KNOWN_LABELS.publishResults));
    zero('sweeps', each('result', KNOWN_LABELS.sweepResults));
    zero('schedulers', each('state', KNOWN_LABELS.schedulerStates));
    zero('dispatchLag', each('trigger', KNOWN_LABELS.triggers));
    zero('taskRetries', each('type', KNOWN_LABELS.taskTypes));
    zero('taskQueueWait', each('type', KNOWN_LABELS.taskTypes));
    const pairs = (
      a: string,
      as: readonly string[],
      b: string,
      bs: readonly string[],
    ) => as.flatMap(x => bs.map(y => ({[a]: x, [b]: y})));
    zero(
      'taskDuration',
      pairs('type', KNOWN_LABELS.taskTypes, 'outcome', KNOWN_LABELS.outcomes),
    );
    zero(
      'taskFailures',
      pairs('type', KNOWN_LABELS.taskTypes, 'reason', FAILURE_REASONS),
    );
    for (const key of [
      'producerLastTick',
      'tasksInProgress',
      'consumerLastTask',
      'failedTasksStored',
      'redrives',
      'httpInFlight',
      'stayAliveWorkers',
      'stayAliveRestarts',
    ] as const) {
      zero(key, [{}]);
    }
  }
}

function create(
  definition: MetricDefinition,
  registry: Registry,
  collect: () => Promise<void> | undefined,
): Counter | Gauge | Histogram {
  const common = {
    name: definition.name,
    help: definition.help,
    labelNames: [...definition.labels],
    registers: [registry],
  };
  switch (definition.type) {
    case 'counter':
      return new Counter(common);
    case 'gauge':
      return new Gauge({
        ...common,
        async collect() {
          await collect();
        },
      });
    case 'histogram':
      return new Histogram({
        ...common,
        buckets: [...(definition.buckets ?? [])],
      });
  }
}

/**
 * How long a scrape waits for a database or broker read: well inside
 * Prometheus's default 10 s scrape timeout, so a stalled dependency shows as
 * stale gauges (and a logged warning), not as a failed scrape.
 */
export const SCRAPE_READ_TIMEOUT_MS = 2000;

async function withinScrapeTime(
  reading: Promise<void>,
  timeoutMs: number,
): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      reading,
      new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`no answer within ${timeoutMs} ms`)),
          timeoutMs,
        );
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * `read`, called at most once per `cacheMs`: concurrent and repeated
 * scrapes share one answer, so scraping never loads the database or broker.
 */
export function cached<T>(
  cacheMs: number,
  read: () => Promise<T>,
): () => Promise<T> {
  let last: {at: number; value: Promise<T>} | undefined;
  return () => {
    const now = performance.now();
    if (!last || now - last.at >= cacheMs) {
      const value = read();
      last = {at: now, value};
      // A failure is not kept: the next scrape asks again.
      value.catch(() => {
        if (last?.value === value) last = undefined;
      });
    }
    return last.value;
  };
}
