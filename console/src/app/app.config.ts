import {provideHttpClient, withInterceptors} from '@angular/common/http';
import {
  ApplicationConfig,
  provideExperimentalZonelessChangeDetection,
} from '@angular/core';
import {provideRouter, withComponentInputBinding} from '@angular/router';
import {provideApiConfiguration} from '@client/api-configuration';
import {routes} from './app.routes';
import {authInterceptor} from './auth/auth.interceptor';

/** Zoneless (signals drive change detection): no zone.js in the bundle. */
export const appConfig: ApplicationConfig = {
  providers: [
    provideExperimentalZonelessChangeDetection(),
    provideRouter(routes, withComponentInputBinding()),
    provideHttpClient(withInterceptors([authInterceptor])),
    provideApiConfiguration('/api'),
  ],
};
