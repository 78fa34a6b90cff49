export * from './scheduler-execution.model';
export * from './scheduler.model';
