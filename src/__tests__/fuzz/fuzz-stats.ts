import type {FuzzRequest} from './request-arbitrary';
import type {Answer} from './response-checks';

type StatusClass = '2xx' | '3xx' | '4xx' | '5xx' | 'other';

interface OperationStats {
  requests: number;
  classes: Record<StatusClass, number>;
  slowestMs: number;
}

const statusClass = (status: number): StatusClass =>
  status >= 200 && status < 600
    ? (`${Math.floor(status / 100)}xx` as StatusClass)
    : 'other';

const emptyClasses = (): Record<StatusClass, number> => ({
  '2xx': 0,
  '3xx': 0,
  '4xx': 0,
  '5xx': 0,
  other: 0,
});

/** Counts for RELIABILITY.md: per operation, per status, per auth and body kind. */
export class FuzzStats {
  readonly operations = new Map<string, OperationStats>();
  readonly classes = emptyClasses();
  readonly statuses = new Map<number, number>();
  readonly auths = new Map<string, number>();
  readonly bodies = new Map<string, number>();
  readonly durations: number[] = [];
  slowest?: {request: FuzzRequest; answer: Answer};
  /** Refused (4xx) writes whose tables were compared before and after. */
  refusedWritesChecked = 0;
  /** Requests whose head the parser refused while their body was still being sent. */
  closedEarly = 0;

  recordClosedEarly(request: FuzzRequest): void {
    this.closedEarly++;
    this.record(request, {status: 0, contentType: '', text: '', ms: 0});
  }

  record(request: FuzzRequest, answer: Answer): void {
    const op = this.operations.get(request.operation) ?? {
      requests: 0,
      classes: emptyClasses(),
      slowestMs: 0,
    };
    const kind = statusClass(answer.status);
    op.requests++;
    op.classes[kind]++;
    op.slowestMs = Math.max(op.slowestMs, answer.ms);
    this.operations.set(request.operation, op);
    this.classes[kind]++;
    bump(this.statuses, answer.status);
    bump(this.auths, request.auth);
    bump(this.bodies, request.body?.kind ?? '(none)');
    if (answer.status === 0) return;
    this.durations.push(answer.ms);
    if (!this.slowest || answer.ms > this.slowest.answer.ms) {
      this.slowest = {request, answer};
    }
  }

  get total(): number {
    return this.durations.length + this.closedEarly;
  }

  percentile(p: number): number {
    const sorted = [...this.durations].sort((a, b) => a - b);
    return (
      sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? 0
    );
  }

  /** The per-operation table, as Markdown. */
  operationTable(): string {
    const rows = [...this.operations.entries()]
      .sort(([a], [b]) => a.localeCompare(b))
      .map(
        ([id, op]) =>
          `| ${id} | ${op.requests} | ${op.classes['2xx']} | ${op.classes['4xx']} | ${op.classes['5xx']} | ${Math.round(op.slowestMs)} |`,
      );
    return [
      '| Operation | Requests | 2xx | 4xx | 5xx | Slowest (ms) |',
      '| --- | ---: | ---: | ---: | ---: | ---: |',
      ...rows,
    ].join('\n');
  }

  summary(): string {
    const list = (map: Map<string | number, number>) =>
      [...map.entries()]
        .sort(([a], [b]) => String(a).localeCompare(String(b)))
        .map(([key, count]) => `${key}: ${count}`)
        .join(', ');
    return [
      `requests: ${this.total} over ${this.operations.size} operations`,
      `status classes: ${list(new Map(Object.entries(this.classes)))}`,
      `statuses: ${list(this.statuses)}`,
      `auth: ${list(this.auths)}`,
      `bodies: ${list(this.bodies)}`,
      `refused writes checked for data changes: ${this.refusedWritesChecked} (any change fails the run)`,
      `closed before the body was sent (head over 16 KiB, "other"): ${this.closedEarly}`,
      `latency ms: p50 ${this.percentile(0.5).toFixed(1)}, p99 ${this.percentile(0.99).toFixed(1)}, max ${(this.slowest?.answer.ms ?? 0).toFixed(1)}` +
        (this.slowest
          ? ` (${this.slowest.request.method} ${this.slowest.request.path}, ${this.slowest.request.body?.kind ?? 'no'} body, ${this.slowest.answer.status})`
          : ''),
    ].join('\n');
  }
}

function bump<K>(map: Map<K, number>, key: K): void {
  map.set(key, (map.get(key) ?? 0) + 1);
}
