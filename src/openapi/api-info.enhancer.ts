import {injectable} from '@loopback/core';
import {asSpecEnhancer, OASEnhancer, OpenApiSpec} from '@loopback/rest';
import {
  SERVICE_GUIDES,
  SERVICE_LICENSE,
  SERVICE_TITLE,
  serviceVersion,
} from '../about/service-info';
import {forEachOperation} from './operations';

/** One line per tag: a client generator names its service class after it. */
export const TAG_DESCRIPTIONS: Record<string, string> = {
  Auth: 'Log in for a bearer token',
  Config: 'Key/value settings readable by everyone; never store secrets here',
  FailedTask: 'Tasks that failed after their last retry, and their re-drive',
  ApiKey:
    'API keys (tsk_…) for machines: made, listed and revoked by a signed-in person',
  AuditEvent:
    'The audit log: who changed what, when and why (operators, admins)',
  Calendar:
    'Business calendars: blackout or allowed dates and times that schedulers follow',
  Group: 'User groups (report and reminder recipients)',
  Health: 'Liveness and readiness probes (no token)',
  HttpTarget:
    'URLs the consumer calls as HTTP tasks, signed the Standard Webhooks way; credential headers and secrets are write-only',
  Language: 'Languages used for execution',
  Notification: 'Web notifications; everyone sees their own, admins all',
  Ping: 'A trivial answer to check the API is reachable',
  Reminder: 'Reminder messages and their recipients',
  Report: 'The report catalog, and running a report on demand',
  Scheduler: 'Cron and one-time schedulers, and their run history',
  SchedulerExecution: 'The run ledger: one row per claimed execution',
  System:
    'The system at a glance: producer, queues, stay-alive workers, failures',
  Ticket: 'Tickets; the owner or an admin may change one',
  User: 'User accounts (admins only)',
  Webhook:
    'Endpoints told of runs, scheduler changes and notices, signed the Standard Webhooks way; operators manage their own',
  Worker: 'Worker executables the consumer may start',
};

/** What the API is, how to call it, and where its guides are. */
export const API_DESCRIPTION = [
  'Schedulers (cron and one-time) and the reports, workers and reminders they run, ' +
    'with their run history and failed tasks. Every error has the uniform body ' +
    '`ErrorResponse`. Send the token from POST /auth/login as `Authorization: Bearer <token>`.',
  '',
  "Guides, in the project's repository:",
  '',
  ...SERVICE_GUIDES.map(guide => `- \`${guide.path}\`: ${guide.about}`),
].join('\n');

/**
 * The document's `info` and its global `tags`, each with a description, so
 * every operation's tag is declared. A tag without a description here fails
 * the OpenAPI tests rather than going undocumented.
 */
@injectable(asSpecEnhancer)
export class ApiInfoEnhancer implements OASEnhancer {
  name = 'api-info';

  modifySpec(spec: OpenApiSpec): OpenApiSpec {
    const used = new Set<string>();
    forEachOperation(spec, operation => {
      for (const tag of operation.tags ?? []) used.add(tag);
    });
    return {
      ...spec,
      info: {
        title: SERVICE_TITLE,
        version: serviceVersion(),
        description: API_DESCRIPTION,
        contact: {name: 'Task Scheduler maintainers'},
        license: {name: SERVICE_LICENSE},
      },
      tags: [...used].sort().map(name => ({
        name,
        description: TAG_DESCRIPTIONS[name] ?? '',
      })),
    };
  }
}
