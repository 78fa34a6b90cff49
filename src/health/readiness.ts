import type {HttpErrorBody} from '../middleware/error-mapping';

/** The outcome of one readiness check. */
export type CheckResult = {status: 'up'} | {status: 'down'; reason: string};

export interface ReadinessCheck {
  /** Names the dependency in responses: postgres, rabbitmq, producer, stay-alive. */
  name: string;
  run(): Promise<CheckResult>;
}

export type ReadinessReport = Record<string, CheckResult>;

export interface HealthResponse {
  statusCode: number;
  body: object;
  /** Headers beside the JSON ones (a 405's Allow). */
  headers?: Record<string, string>;
}

/** A producer ticks every minute; two minutes without a finished tick means it is stuck. */
export const MAX_TICK_AGE_MS = 2 * 60 * 1000;

/** Ready when the last loop iteration finished within `maxAgeMs` before `now`. */
export function loopFreshness(
  what: string,
  lastFinished: Date | undefined,
  now: Date,
  maxAgeMs = MAX_TICK_AGE_MS,
): CheckResult {
  if (lastFinished === undefined) {
    return {status: 'down', reason: `no ${what} has finished yet`};
  }
  const ageMs = now.getTime() - lastFinished.getTime();
  if (ageMs > maxAgeMs) {
    return {
      status: 'down',
      reason: `the last ${what} finished ${Math.round(ageMs / 1000)} s ago (limit ${maxAgeMs / 1000} s)`,
    };
  }
  return {status: 'up'};
}

/** Why a probe failed, without hosts' credentials: system error codes as they are. */
export function describeFailure(error: unknown): string {
  const err = error as {code?: unknown; message?: unknown};
  if (typeof err?.code === 'string' && /^E[A-Z]+$/.test(err.code)) {
    return `unreachable (${err.code})`;
  }
  const message =
    typeof err?.message === 'string' && err.message !== ''
      ? err.message
      : String(error);
  return message.replace(/\/\/[^@/\s]*@/g, '//').slice(0, 200);
}

/** Runs every check at once; a check that throws or outlasts `timeoutMs` is down. */
export async function runChecks(
  checks: ReadinessCheck[],
  timeoutMs: number,
): Promise<ReadinessReport> {
  const results = await Promise.all(
    checks.map(async check => {
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<CheckResult>(resolve => {
        timer = setTimeout(
          () =>
            resolve({
              status: 'down',
              reason: `no answer within ${timeoutMs} ms`,
            }),
          timeoutMs,
        );
      });
      try {
        const result = await Promise.race([check.run(), timeout]);
        return [check.name, result] as const;
      } catch (error) {
        return [
          check.name,
          {status: 'down', reason: describeFailure(error)} as CheckResult,
        ] as const;
      } finally {
        clearTimeout(timer);
      }
    }),
  );
  return Object.fromEntries(results);
}

/** GET /health: the process answers; nothing else is asked. */
export function livenessResponse(now: Date): HealthResponse {
  return {statusCode: 200, body: {status: 'ok', time: now.toISOString()}};
}

/**
 * GET /ready: 200 with every check when all are up; otherwise 503 with the
 * uniform error body, one detail per check that is down.
 */
export function readinessResponse(report: ReadinessReport): HealthResponse {
  const down = Object.entries(report).filter(
    (entry): entry is [string, {status: 'down'; reason: string}] =>
      entry[1].status === 'down',
  );
  if (down.length === 0) {
    return {statusCode: 200, body: {status: 'ready', checks: report}};
  }
  const error: HttpErrorBody = {
    statusCode: 503,
    name: 'ServiceUnavailableError',
    message: `Not ready: ${down.map(([name]) => name).join(', ')} ${down.length === 1 ? 'is' : 'are'} not available`,
    // Which dependency is down, never its error text (it may name hosts,
    // users or databases): the reason goes to the log (ReadinessService).
    details: down.map(([name]) => ({
      path: `/${name}`,
      code: 'unavailable',
      message: 'not available',
    })),
  };
  return {statusCode: 503, body: {error}};
}
