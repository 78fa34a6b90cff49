import fc from 'fast-check';
import type {ApiDescription} from './api-operations';
import {changedTables, DataSnapshotter, Snapshot} from './data-snapshot';
import {Fixtures, KNOWN_CONFIG_KEYS} from './fuzz-environment';
import type {FuzzService} from './fuzz-service';
import {FuzzStats} from './fuzz-stats';
import {RecordPool} from './record-pool';
import type {Failure} from './reproducer';
import {FuzzRequest, fuzzRequest} from './request-arbitrary';
import {answerChecker, confirmSlowness} from './response-checks';

export interface FuzzSettings {
  seed: number;
  requests: number;
  /** fast-check's replay path, to go straight to a reported counterexample. */
  path?: string;
}

export interface FuzzOutcome {
  stats: FuzzStats;
  /** The first failing request, and the smallest one shrinking found. */
  firstFailure?: Failure;
  minimalFailure?: Failure;
  /** How fast-check names the counterexample, for `--path`. */
  counterexamplePath?: string;
}

/** Actors and seeded rows are put back this often, as requests delete them. */
const RESTORE_EVERY = 25;
/** Shrinking resends requests to the live service: bounded, as every loop here. */
const SHRINK_BUDGET = 300;

const isWrite = (request: FuzzRequest) => request.method !== 'GET';

/**
 * Node refuses a request head over 16 KiB (431, then closes) before reading
 * any body; a client still uploading a body, or a head too long for the
 * socket's buffers (a URL of a megabyte), sees the connection reset instead
 * of the answer. That answer itself is checked by http-parser-errors.acceptance.
 */
const HEAD_LIMIT = 16 * 1024;
/** A head this long is still being written when the server closes. */
const UNBUFFERED_HEAD = 64 * 1024;
const headRefused = (service: FuzzService, request: FuzzRequest) => {
  const urlBytes = Buffer.byteLength(service.url(request));
  return (
    (request.body !== undefined && urlBytes > HEAD_LIMIT - 1024) ||
    urlBytes > UNBUFFERED_HEAD
  );
};

/**
 * Sends `requests` generated requests one after another (so each is timed
 * alone and the run is reproducible from its seed), checking each answer; on
 * the first failure fast-check shrinks it to a smaller request that still fails.
 */
export async function runFuzz(
  api: ApiDescription,
  service: FuzzService,
  fixtures: Fixtures,
  snapshotter: DataSnapshotter,
  settings: FuzzSettings,
): Promise<FuzzOutcome> {
  const check = answerChecker(api.errorSchema);
  const stats = new FuzzStats();
  const outcome: FuzzOutcome = {stats};
  const pool = new RecordPool(api.operations);
  let before: Snapshot | undefined;
  let sent = 0;
  let shrinkRuns = 0;

  const property = fc.asyncProperty(
    fuzzRequest(api.operations, KNOWN_CONFIG_KEYS),
    async generated => {
      if (outcome.firstFailure && ++shrinkRuns > SHRINK_BUDGET) return;
      const index = ++sent;
      if (index % RESTORE_EVERY === 0 && (await fixtures.restore())) {
        before = undefined;
      }
      const request = pool.resolve(generated);
      if (isWrite(request)) before ??= await snapshotter.take();
      const fail = (failure: Omit<Failure, 'index' | 'request'>) => {
        const recorded = {index, request, ...failure};
        outcome.firstFailure ??= recorded;
        outcome.minimalFailure = recorded;
        throw new Error(failure.problems.join('; '));
      };
      let answer;
      try {
        answer = await service.send(request);
      } catch (error) {
        before = undefined;
        const crash = await service.crashEvidence();
        const timedOut = (error as Error).name === 'TimeoutError';
        if (!timedOut && crash.length === 0 && headRefused(service, request)) {
          if (!outcome.firstFailure) stats.recordClosedEarly(request);
          return;
        }
        return fail({
          problems: [
            timedOut
              ? 'no answer: the request hung'
              : `no answer: ${(error as Error).message}`,
            ...crash,
          ],
        });
      }
      if (!outcome.firstFailure) stats.record(request, answer);
      pool.remember(request, answer);
      const problems = await confirmSlowness(
        check(answer),
        request,
        answer,
        () => service.send(request),
      );
      if (isWrite(request) && answer.status >= 400 && answer.status < 500) {
        const after = await snapshotter.take();
        const changed = changedTables(before!, after);
        if (!outcome.firstFailure) stats.refusedWritesChecked++;
        if (changed.length > 0) {
          problems.push(`refused request changed data: ${changed.join(', ')}`);
        }
        before = after;
      } else if (isWrite(request)) {
        before = undefined;
      }
      if (problems.length > 0) fail({answer, problems});
    },
  );

  const details = await fc.check(property, {
    seed: settings.seed,
    numRuns: settings.requests,
    ...(settings.path ? {path: settings.path} : {}),
    // The counterexample is printed by reproducer.ts, shortened.
    verbose: fc.VerbosityLevel.None,
  });
  if (details.failed)
    outcome.counterexamplePath = details.counterexamplePath ?? undefined;
  return outcome;
}
