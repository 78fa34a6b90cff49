import {expect} from '@loopback/testlab';
import {rmSync} from 'node:fs';
import {MAX_LINE_BYTES} from '../../executors/bounded-output';
import {resetBroker} from '../fixtures/test-broker';
import {
  eventually,
  givenConsumer,
  givenWorkersDir,
  publishTask,
  TestConsumer,
} from '../fixtures/test-consumer';
import {givenCatalog, sql, truncateAll} from '../fixtures/test-database';

describe('consumer: a worker that prints without bounds', () => {
  const OUTPUT_MAX = 64 * 1024;
  let workersDir: string;
  let consumer: TestConsumer | undefined;

  before(() => {
    workersDir = givenWorkersDir({
      // 64 MB in one line, then 100,000 short lines.
      flood: `#!/bin/sh\nhead -c 67108864 /dev/zero | tr '\\0' x\necho\nseq 1 100000\n`,
    });
  });
  after(() => rmSync(workersDir, {recursive: true, force: true}));
  beforeEach(async () => {
    await truncateAll();
    await givenCatalog();
    await resetBroker();
    await sql(`UPDATE worker SET command = 'flood' WHERE id = 1`);
  });
  afterEach(async () => {
    await consumer?.stop(100);
    consumer = undefined;
  });

  it('logs at most TASK_OUTPUT_MAX_BYTES, cut lines, and notes the cut in the ledger', async () => {
    consumer = await givenConsumer({workersDir, outputMaxBytes: OUTPUT_MAX});
    const [scheduler] = await sql<{id: number}>(
      `INSERT INTO scheduler (description, schedule, worker_id)
       VALUES ('flood', '* * * * *', 1) RETURNING id`,
    );
    const [execution] = await sql<{id: string}>(
      `INSERT INTO scheduler_execution (scheduler_id, execution_key, container_id, status, published_at)
       VALUES ($1, 'cron-2026-11-21-10-00', 'test', 'published', now()) RETURNING id`,
      [scheduler.id],
    );
    await publishTask(
      {
        type: 'worker',
        id: 1,
        scheduler_id: scheduler.id,
        params_scheduler: '{}',
      },
      {
        'x-execution-id': Number(execution.id),
        'x-execution-key': 'cron-2026-11-21-10-00',
      },
    );
    const row = await eventually(
      async () => {
        const [r] = await sql(
          `SELECT status, output_truncated FROM scheduler_execution WHERE id = $1`,
          [execution.id],
        );
        return r.status === 'succeeded' ? r : undefined;
      },
      30_000,
      'success',
    );
    expect(row.output_truncated).to.equal(true);
    const lines = consumer.logs
      .find('Task output')
      .map(record => record.line as string);
    expect(lines[0]).to.equal(`${'x'.repeat(MAX_LINE_BYTES)}…`);
    for (const line of lines) {
      expect(Buffer.byteLength(line)).to.be.belowOrEqual(MAX_LINE_BYTES + 3);
    }
    const bytes = lines.reduce((sum, line) => sum + line.length + 1, 0);
    expect(bytes).to.be.belowOrEqual(OUTPUT_MAX + 4);
    expect(consumer.logs.find('Task output cut')).to.have.length(1);
  });
});
