import {inject} from '@angular/core';
import {CanActivateChildFn, CanActivateFn, Router} from '@angular/router';
import {SessionService} from './session.service';

/** Views behind sign-in: without a usable session, go to the sign-in view. */
export const signedIn: CanActivateChildFn = async (_route, state) => {
  const session = inject(SessionService);
  const router = inject(Router);
  const user = await session.currentUser();
  // Come back to the deep link (/schedulers/12) once signed in.
  return user
    ? true
    : router.createUrlTree(['/sign-in'], {queryParams: {next: state.url}});
};

/**
 * Views that only change things (the scheduler editor): a viewer goes to the
 * schedulers list instead of a form it cannot save.
 */
export const canWrite: CanActivateFn = async () => {
  const session = inject(SessionService);
  const router = inject(Router);
  const user = await session.currentUser();
  if (!user) return router.createUrlTree(['/sign-in']);
  return session.canWrite() ? true : router.createUrlTree(['/schedulers']);
};
