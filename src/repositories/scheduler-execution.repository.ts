import {Getter, inject} from '@loopback/core';
import {
  BelongsToAccessor,
  DefaultCrudRepository,
  repository,
} from '@loopback/repository';
import {PostgresDataSource} from '../datasources/postgres.datasource';
import {
  Scheduler,
  SchedulerExecution,
  SchedulerExecutionRelations,
} from '../models';
import {SchedulerRepository} from './scheduler.repository';

export class SchedulerExecutionRepository extends DefaultCrudRepository<
  SchedulerExecution,
  typeof SchedulerExecution.prototype.id,
  SchedulerExecutionRelations
> {
  public readonly scheduler: BelongsToAccessor<
    Scheduler,
    typeof SchedulerExecution.prototype.id
  >;

  constructor(
    @inject('datasources.postgres') dataSource: PostgresDataSource,
    @repository.getter('SchedulerRepository')
    schedulerRepositoryGetter: Getter<SchedulerRepository>,
  ) {
    super(SchedulerExecution, dataSource);
    this.scheduler = this.createBelongsToAccessorFor(
      'scheduler',
      schedulerRepositoryGetter,
    );
  }
}
