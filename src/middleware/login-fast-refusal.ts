import type {RequestHandler} from 'express';
import type {KnownLocks} from '../auth/login-throttle';
import {
  REFUSAL_DELAY_MS,
  throttleKeys,
  tooManyAttempts,
} from '../auth/login-throttle';
import {writeErrorResponse} from './error-response';

/**
 * Refuses a sign-in from a client address this process knows to be locked
 * before anything else is done for it: no body parsing, routing, validation
 * or database round trip. The controller gives the same answer (it checks
 * the same locks), so this only makes a login flood cheap enough that the
 * other requests keep their latency. Account locks need the body and stay
 * with the controller.
 */
export function loginFastRefusal(options: {
  loginPath: string;
  knownLocks: KnownLocks;
  clock: () => Date;
}): RequestHandler {
  return (request, response, next) => {
    // originalUrl: the path with the API base path, wherever this is mounted.
    const path = (request.originalUrl ?? request.url).split('?')[0];
    if (request.method !== 'POST' || path !== options.loginPath) {
      next();
      return;
    }
    const nowMs = options.clock().getTime();
    const {address} = throttleKeys('', request.ip ?? 'unknown');
    const until = options.knownLocks.lockedUntil(address, nowMs);
    if (until === undefined) {
      next();
      return;
    }
    const error = tooManyAttempts(Math.ceil((until - nowMs) / 1000));
    setTimeout(
      () => writeErrorResponse(response as never, error, false),
      REFUSAL_DELAY_MS,
    );
  };
}
