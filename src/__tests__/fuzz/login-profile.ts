import type {Actors} from './fuzz-environment';
import {FuzzService, loginRequest} from './fuzz-service';
import type {Answer} from './response-checks';

export interface LoginProfileOutcome {
  sent: number;
  statuses: Map<number, number>;
  problems: string[];
}

/** Wrong passwords for one account: past the free failures it must meet 429s. */
const ATTEMPTS = 12;

/**
 * The login profile (issue 20): a burst of wrong passwords for one actor
 * from one address. Every answer must pass the usual checks (uniform error
 * body, no 5xx, under a second), and the throttle must have answered 429
 * with a Retry-After. Runs after the random requests: the actor is locked
 * out afterwards, its token still works.
 */
export async function runLoginProfile(
  service: FuzzService,
  actors: Actors,
  check: (answer: Answer) => string[],
): Promise<LoginProfileOutcome> {
  const outcome: LoginProfileOutcome = {
    sent: 0,
    statuses: new Map(),
    problems: [],
  };
  let retryAfterSeen = false;
  for (let i = 0; i < ATTEMPTS; i++) {
    const answer = await service.send(
      loginRequest(actors.email('viewer'), `wrong-${i}-not-the-password`),
    );
    outcome.sent++;
    outcome.statuses.set(
      answer.status,
      (outcome.statuses.get(answer.status) ?? 0) + 1,
    );
    outcome.problems.push(
      ...check(answer).map(problem => `login attempt ${i + 1}: ${problem}`),
    );
    if (answer.status === 429 && answer.retryAfter) retryAfterSeen = true;
  }
  if (!outcome.statuses.has(429) || !retryAfterSeen) {
    outcome.problems.push(
      `no 429 with Retry-After after ${ATTEMPTS} wrong passwords for one account`,
    );
  }
  return outcome;
}
