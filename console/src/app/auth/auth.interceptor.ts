import {HttpErrorResponse, HttpInterceptorFn} from '@angular/common/http';
import {inject} from '@angular/core';
import {catchError, throwError} from 'rxjs';
import {SessionService} from './session.service';

const LOGIN_PATH = '/api/auth/login';

/**
 * Adds the bearer token to the generated client's calls, and ends the
 * session on a 401 (expired, revoked, user deactivated) so the user lands on
 * the sign-in view with a message instead of a broken page. Only a 401 to
 * the token still in use ends it: a late answer to a call sent with an
 * earlier session's token (a poll in flight while the user signed in again)
 * must not sign the new session out.
 */
export const authInterceptor: HttpInterceptorFn = (request, next) => {
  const session = inject(SessionService);
  const token = session.token();
  const isApi = request.url.startsWith('/api/');
  const isLogin = request.url === LOGIN_PATH;
  const authed =
    token && isApi && !isLogin
      ? request.clone({setHeaders: {Authorization: `Bearer ${token}`}})
      : request;
  return next(authed).pipe(
    catchError((error: unknown) => {
      if (
        error instanceof HttpErrorResponse &&
        error.status === 401 &&
        isApi &&
        !isLogin &&
        token !== null &&
        session.token() === token
      ) {
        session.expire(
          'Your session has expired or was signed out: sign in again.',
        );
      }
      return throwError(() => error);
    }),
  );
};
