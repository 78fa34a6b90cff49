import type {AnyObject, Entity} from '@loopback/repository';
import type {Request} from '@loopback/rest';
import {
  appendAuditEvent,
  AuditChanges,
  diffChanges,
  SqlExecutor,
} from '../audit/audit-event';
import {changeReason} from '../controllers/scheduler-run.controller';
import {transactionSettingsOf} from '../datasources/postgres.datasource';
import type {EntityRepository} from './repositories';

type Options = {transaction: unknown};

/** The record as the API shows it (hidden fields such as password_hash left out). */
export const visible = (entity: Entity | null | undefined): AnyObject =>
  entity ? (entity.toJSON() as AnyObject) : {};

/**
 * Runs a CRUD write and appends its audit event in one transaction, so the
 * log never tells of a change that rolled back nor misses one that stayed.
 * `work` gets the transaction's options for every repository call; it
 * returns the record before and after (and whether a secret was set, which
 * is logged only as changed).
 */
export async function auditedWrite<E extends Entity, T>(
  repository: EntityRepository<E>,
  event: {
    actorUserId: number;
    action: 'create' | 'update' | 'delete';
    entity: string;
    request: Request;
    /** Given by the caller (a bulk action's); else read from X-Change-Reason. */
    reason?: string;
  },
  work: (options: Options) => Promise<{
    id: unknown;
    before: AnyObject;
    after: AnyObject;
    secretChanged?: boolean;
    result: T;
  }>,
): Promise<T> {
  // Checked first: a reason over the limit refuses the write itself (422).
  const reason = changeReason(event.request, event.reason);
  const dataSource = repository.dataSource;
  if (!dataSource.connected) await dataSource.connect();
  const transaction = (await dataSource.beginTransaction({
    isolationLevel: 'READ COMMITTED',
  })) as {commit(): Promise<void>; rollback(): Promise<void>};
  const options = {transaction};
  try {
    // The settings the database's rules read (the stay-alive cap), local to
    // this transaction: they hold through a transaction pooler as well.
    for (const [name, value] of Object.entries(
      transactionSettingsOf(dataSource),
    )) {
      await repository.execute(
        'SELECT set_config($1, $2, true)',
        [name, value],
        options,
      );
    }
    const done = await work(options);
    const changes: AuditChanges = diffChanges(done.before, done.after);
    if (done.secretChanged) changes.password = ['[redacted]', '[redacted]'];
    const execute: SqlExecutor = (sql, params) =>
      repository.execute(sql, params, options);
    await appendAuditEvent(execute, {
      actorUserId: event.actorUserId,
      action: event.action,
      entity: event.entity,
      entityId: done.id as string | number,
      reason,
      changes,
    });
    await transaction.commit();
    return done.result;
  } catch (error) {
    await transaction.rollback().catch(() => undefined);
    throw error;
  }
}

/**
 * Creates a record in an audited transaction and reads it back, so the
 * answer carries the database's defaults. `secretChanged`: a secret was set
 * (logged only as changed).
 */
export async function auditedCreate<E extends Entity>(
  repository: EntityRepository<E>,
  event: {actorUserId: number; entity: string; request: Request},
  data: AnyObject,
  secretChanged = false,
): Promise<E> {
  return auditedWrite(
    repository,
    {...event, action: 'create'},
    async options => {
      const created = await repository.create(data as E, options);
      const stored = await repository.findById(
        created.getId(),
        undefined,
        options,
      );
      return {
        id: created.getId(),
        before: {},
        after: visible(stored),
        secretChanged,
        result: stored,
      };
    },
  );
}
