import {mkdtempSync, rmSync} from 'node:fs';
import {tmpdir} from 'node:os';
import path from 'node:path';
import {dropDatabase} from '../../database/database-admin';
import {migrateDatabase} from '../../database/migration-runner';
import {amqpUrlFor, createVhost, deleteVhost} from '../fixtures/test-broker';
import {uniqueDatabaseUrl} from '../fixtures/test-database';
import {LogCapture} from '../fixtures/log-capture';

export interface ChaosEnvironment {
  databaseUrl: string;
  amqpUrl: string;
  vhost: string;
  /** Per-run folder: side-effect file, fault triggers, process logs. */
  dir: string;
  remove(options: {keepDir: boolean}): Promise<void>;
}

/**
 * A database (migrated) and a vhost of this run's own, plus a temp folder.
 * `remove` is idempotent, so both the normal path and a signal handler may
 * call it.
 */
export async function createChaosEnvironment(): Promise<ChaosEnvironment> {
  const databaseUrl = uniqueDatabaseUrl('chaos');
  const vhost = path.basename(new URL(databaseUrl).pathname);
  const dir = mkdtempSync(path.join(tmpdir(), 'task-scheduler-chaos-'));
  let removed: Promise<void> | undefined;
  const remove = async (keepDir: boolean) => {
    const results = await Promise.allSettled([
      dropDatabase(databaseUrl),
      deleteVhost(vhost),
    ]);
    if (!keepDir) rmSync(dir, {recursive: true, force: true});
    const failed = results.find(result => result.status === 'rejected');
    if (failed) throw (failed as PromiseRejectedResult).reason;
  };
  const environment: ChaosEnvironment = {
    databaseUrl,
    amqpUrl: amqpUrlFor(vhost),
    vhost,
    dir,
    remove: ({keepDir}) => (removed ??= remove(keepDir)),
  };
  try {
    await Promise.all([
      migrateDatabase(databaseUrl, new LogCapture('error').logger),
      createVhost(vhost),
    ]);
  } catch (error) {
    await environment.remove({keepDir: false}).catch(() => undefined);
    throw error;
  }
  return environment;
}
