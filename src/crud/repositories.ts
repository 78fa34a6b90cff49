import {Constructor, inject} from '@loopback/core';
import {DefaultCrudRepository, Entity} from '@loopback/repository';
import {PostgresDataSource} from '../datasources/postgres.datasource';
import type {
  Config,
  Group,
  Language,
  Notification,
  Reminder,
  Report,
  Scheduler,
  SchedulerExecution,
  Ticket,
  User,
  Worker,
} from '../models';

export type EntityRepository<E extends Entity> = DefaultCrudRepository<
  E,
  unknown,
  {}
>;

/** The binding key of a model's repository: `repositories.<Model>Repository`. */
export function repositoryKey(modelName: string): string {
  return `repositories.${modelName}Repository`;
}

/** A plain CRUD repository for `model` on the PostgreSQL datasource. */
export function defineRepository<E extends Entity>(
  model: typeof Entity & {prototype: E},
): Constructor<EntityRepository<E>> {
  class ModelRepository extends DefaultCrudRepository<E, unknown, {}> {
    constructor(
      @inject('datasources.postgres') dataSource: PostgresDataSource,
    ) {
      super(model, dataSource);
    }
  }
  Object.defineProperty(ModelRepository, 'name', {
    value: `${model.modelName}Repository`,
  });
  return ModelRepository;
}

export type ConfigRepository = EntityRepository<Config>;
export type GroupRepository = EntityRepository<Group>;
export type LanguageRepository = EntityRepository<Language>;
export type NotificationRepository = EntityRepository<Notification>;
export type ReminderRepository = EntityRepository<Reminder>;
export type ReportRepository = EntityRepository<Report>;
export type SchedulerExecutionRepository = EntityRepository<SchedulerExecution>;
export type SchedulerRepository = EntityRepository<Scheduler>;
export type TicketRepository = EntityRepository<Ticket>;
export type UserRepository = EntityRepository<User>;
export type WorkerRepository = EntityRepository<Worker>;
