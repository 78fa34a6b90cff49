import type {ApiDescription} from './api-operations';
import {filterSweep} from './filter-sweep';
import type {FuzzService} from './fuzz-service';
import type {Failure} from './reproducer';
import {answerChecker, confirmSlowness} from './response-checks';

export interface SweepOutcome {
  sent: number;
  statuses: Map<number, number>;
  failures: Failure[];
}

/** A few at a time: fast enough for npm test, and each answer stays under the slow limit. */
const CONCURRENCY = 3;

/** Sends the whole filter sweep (read-only requests) and checks every answer. */
export async function runFilterSweep(
  api: ApiDescription,
  service: FuzzService,
): Promise<SweepOutcome> {
  const check = answerChecker(api.errorSchema);
  const requests = filterSweep(api);
  const outcome: SweepOutcome = {sent: 0, statuses: new Map(), failures: []};
  let next = 0;
  const lane = async () => {
    while (next < requests.length) {
      const index = next++;
      const request = requests[index];
      try {
        const answer = await service.send(request);
        outcome.statuses.set(
          answer.status,
          (outcome.statuses.get(answer.status) ?? 0) + 1,
        );
        const problems = await confirmSlowness(
          check(answer),
          request,
          answer,
          () => service.send(request),
        );
        if (problems.length > 0) {
          outcome.failures.push({index, request, answer, problems});
        }
      } catch (error) {
        outcome.failures.push({
          index,
          request,
          problems: [`no answer: ${(error as Error).message}`],
        });
      }
      outcome.sent++;
    }
  };
  await Promise.all(Array.from({length: CONCURRENCY}, lane));
  return outcome;
}
