import {serviceVersion} from '../about/service-info';
import type {AppConfig} from '../config';
import {runsRole} from '../process/app-mode';
import type {MetricRole} from './catalog';
import {Metrics} from './metrics';

type Role = Exclude<MetricRole, 'all'>;

/** The metric roles of an APP_MODE (`all` runs every one). */
export function metricRoles(mode: AppConfig['appMode']): Set<Role> {
  const roles = new Set<Role>();
  if (runsRole(mode, 'api')) roles.add('api');
  if (runsRole(mode, 'scheduler')) roles.add('producer');
  if (runsRole(mode, 'worker')) roles.add('consumer');
  if (runsRole(mode, 'stay-alive')) roles.add('stay_alive');
  return roles;
}

/** The metrics of a process running `config`'s roles. */
export function metricsFor(
  config: Pick<AppConfig, 'appMode' | 'buildCommit'>,
): Metrics {
  return new Metrics(metricRoles(config.appMode), {
    version: serviceVersion(),
    commit: config.buildCommit,
  });
}
