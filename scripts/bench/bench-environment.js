'use strict';
// A database and a RabbitMQ vhost of a benchmark's own, created migrated and
// removed afterwards, so benchmarks never touch real data or each other.
const {execFileSync} = require('node:child_process');
const {loadConfig} = require('../../dist/config');
const {dropDatabase} = require('../../dist/database/database-admin');
const {withDatabase} = require('../../dist/database/database-url');
const {migrateDatabase} = require('../../dist/database/migration-runner');
const {createLogger} = require('../../dist/logging/logger');

const rabbitmqctl = (...args) =>
  execFileSync('rabbitmqctl', ['-q', ...args], {
    env: {...process.env, PATH: `${process.env.PATH}:/usr/sbin`},
  });

async function createBenchEnvironment() {
  const config = loadConfig();
  const name = `task_scheduler_bench_${process.pid}_${Date.now().toString(36)}`;
  const databaseUrl = withDatabase(config.databaseUrl, name);
  const amqp = new URL(config.amqpUrl);
  const user = amqp.username || 'guest';
  amqp.pathname = `/${name}`;
  const logger = createLogger({level: 'error', service: 'bench'});
  await migrateDatabase(databaseUrl, logger);
  rabbitmqctl('add_vhost', name);
  rabbitmqctl('set_permissions', '-p', name, user, '.*', '.*', '.*');
  return {
    config,
    databaseUrl,
    amqpUrl: amqp.toString(),
    logger,
    async remove() {
      rabbitmqctl('delete_vhost', name);
      await dropDatabase(databaseUrl);
    },
  };
}

module.exports = {createBenchEnvironment};
