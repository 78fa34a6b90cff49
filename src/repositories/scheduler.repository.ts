import {inject} from '@loopback/core';
import {DefaultCrudRepository} from '@loopback/repository';
import {PostgresDataSource} from '../datasources/postgres.datasource';
import {Scheduler, SchedulerRelations} from '../models';

export class SchedulerRepository extends DefaultCrudRepository<
  Scheduler,
  typeof Scheduler.prototype.id,
  SchedulerRelations
> {
  constructor(@inject('datasources.postgres') dataSource: PostgresDataSource) {
    super(Scheduler, dataSource);
  }
}
