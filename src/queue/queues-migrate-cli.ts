import {loadConfig} from '../config';
import {createLogger} from '../logging/logger';
import {connectToAnyNode} from './amqp-connection';
import {migrateQueues} from './queue-migration';
import {brokerTopology, retrySettings} from './topology';

/**
 * `npm run queues:migrate`: brings every queue of the topology to
 * AMQP_QUEUE_TYPE (quorum by default) without losing a message. Stop every
 * process of the installation first; safe to run twice.
 */
async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger({
    level: config.logLevel,
    service: `${config.serviceName}-queues-migrate`,
  });
  const {connection} = await connectToAnyNode(config.amqpUrl, {
    clientProperties: {connection_name: 'task-scheduler queues:migrate'},
  });
  try {
    const results = await migrateQueues(
      connection,
      brokerTopology(retrySettings(config)),
      logger,
    );
    for (const result of results) {
      logger.info('Queue checked', {...result});
    }
    logger.info('Queues migrated', {
      queue_type: config.amqpQueueType,
      queues: results.length,
      messages_moved: results.reduce((sum, r) => sum + r.moved, 0),
    });
  } finally {
    await connection.close().catch(() => undefined);
  }
}

main().catch(error => {
  process.stderr.write(
    `${JSON.stringify({level: 'error', msg: 'Queue migration failed', error: (error as Error).message})}\n`,
  );
  process.exitCode = 1;
});
