import {bootstrapApplication} from '@angular/platform-browser';
import {AppComponent} from './app/app.component';
import {appConfig} from './app/app.config';

bootstrapApplication(AppComponent, appConfig).catch((error: unknown) => {
  // Nothing else can show it when the app itself failed to start.
  const root = document.querySelector('app-root');
  if (root) root.textContent = `The console could not start: ${String(error)}`;
});
