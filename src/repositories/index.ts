export * from './scheduler-execution.repository';
export * from './scheduler.repository';
