import './angular-jit';
import {
  HttpInterceptorFn,
  provideHttpClient,
  withFetch,
  withInterceptors,
} from '@angular/common/http';
import {
  createEnvironmentInjector,
  EnvironmentInjector,
  platformCore,
  provideExperimentalZonelessChangeDetection,
  ɵINJECTOR_SCOPE as INJECTOR_SCOPE,
} from '@angular/core';
import {provideApiConfiguration} from '../client/api-configuration';

/**
 * The root injector an Angular app gets from `bootstrapApplication()` with
 * `provideHttpClient(withFetch())` and `provideApiConfiguration(rootUrl)`,
 * built without a DOM so it runs in Node. The `root` scope, which
 * BrowserModule sets in a browser, lets the client's `providedIn: 'root'`
 * services resolve.
 */
export function createAngularApp(
  rootUrl: string,
  interceptors: HttpInterceptorFn[] = [],
): EnvironmentInjector {
  return createEnvironmentInjector(
    [
      {provide: INJECTOR_SCOPE, useValue: 'root'},
      provideExperimentalZonelessChangeDetection(),
      provideHttpClient(withFetch(), withInterceptors(interceptors)),
      provideApiConfiguration(rootUrl),
    ],
    platformCore().injector as EnvironmentInjector,
  );
}
