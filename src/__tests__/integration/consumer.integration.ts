import {expect} from '@loopback/testlab';
import {readFileSync, rmSync} from 'node:fs';
import path from 'node:path';
import {FAILED_QUEUE, TASK_QUEUE} from '../../queue/topology';
import {foreignRunReason} from '../../consumer/task-consumer';
import {drainQueue, resetBroker} from '../fixtures/test-broker';
import {
  eventually,
  givenConsumer,
  givenWorkersDir,
  publishTask,
  TEST_RETRY,
  TestConsumer,
} from '../fixtures/test-consumer';
import {givenCatalog, truncateAll, sql} from '../fixtures/test-database';

describe('consumer (cron-worker)', () => {
  let workersDir: string;
  let consumer: TestConsumer | undefined;
  const record = (name: string) => path.join(workersDir, `${name}.out`);

  before(() => {
    workersDir = givenWorkersDir({
      'record-args': `#!/bin/sh\nprintf '%s\\0' "$@" > "$(dirname "$0")/record-args.out"\n`,
      'always-fails': `#!/bin/sh\necho "attempt at $(date +%s%N)" >> "$(dirname "$0")/always-fails.out"\necho "disk full" >&2\nexit 3\n`,
      slow: `#!/bin/sh\necho start >> "$(dirname "$0")/slow.out"\nsleep 2\necho done >> "$(dirname "$0")/slow.out"\n`,
      // Like slow, but its first run outlasts the broker's connection drop
      // on a busy machine (rabbitmqctl alone can take seconds there).
      'slow-first': `#!/bin/sh\nout="$(dirname "$0")/slow.out"\nif [ -s "$out" ]; then pause=2; else pause=30; fi\necho start >> "$out"\nsleep $pause\necho done >> "$out"\n`,
      'not-executable-target': '',
    });
  });
  after(() => rmSync(workersDir, {recursive: true, force: true}));
  beforeEach(async () => {
    for (const name of ['record-args', 'always-fails', 'slow']) {
      rmSync(record(name), {force: true});
    }
    await truncateAll();
    await givenCatalog();
    await resetBroker();
    await sql(`UPDATE worker SET command = 'record-args' WHERE id = 1`);
    await sql(`UPDATE worker SET command = 'always-fails' WHERE id = 2`);
    await sql(`UPDATE worker SET command = 'slow' WHERE id = 3`);
    await sql(`UPDATE worker SET command = 'missing-program' WHERE id = 4`);
    await sql(`UPDATE report SET controller = 'SelfCheckReport'`);
  });
  afterEach(async () => {
    await consumer?.stop(100);
    consumer = undefined;
  });

  /** A scheduler plus a claimed, published execution row, like the producer leaves. */
  async function givenRun(task: {
    worker_id?: number;
    report_id?: number;
    reminder_id?: number;
  }) {
    const [scheduler] = await sql<{id: number}>(
      `INSERT INTO scheduler (description, schedule, report_id, worker_id, reminder_id)
       VALUES ('t', '* * * * *', $1, $2, $3) RETURNING id`,
      [
        task.report_id ?? null,
        task.worker_id ?? null,
        task.reminder_id ?? null,
      ],
    );
    const [execution] = await sql<{id: string}>(
      `INSERT INTO scheduler_execution (scheduler_id, execution_key, container_id, status, published_at)
       VALUES ($1, 'cron-2026-11-21-10-00', 'test', 'published', now()) RETURNING id`,
      [scheduler.id],
    );
    return {
      schedulerId: scheduler.id,
      executionId: Number(execution.id),
      headers: {
        'x-execution-id': Number(execution.id),
        'x-execution-key': 'cron-2026-11-21-10-00',
      },
    };
  }

  const ledger = async (executionId: number) =>
    (
      await sql(`SELECT * FROM scheduler_execution WHERE id = $1`, [
        executionId,
      ])
    )[0];

  /** A run of worker `workerId` published with `params`, as the producer would. */
  async function publishWorkerRun(workerId: number, params = '{}') {
    const run = await givenRun({worker_id: workerId});
    await publishTask(
      {
        type: 'worker',
        id: workerId,
        scheduler_id: run.schedulerId,
        params_scheduler: params,
      },
      run.headers,
    );
    return run;
  }

  /** Publishes worker 1's message for `run` with `headers` (its own by default). */
  const publishWorkerOne = (
    run: {schedulerId: number; headers: Record<string, unknown>},
    headers: Record<string, unknown> = run.headers,
  ) =>
    publishTask(
      {
        type: 'worker',
        id: 1,
        scheduler_id: run.schedulerId,
        params_scheduler: '{}',
      },
      headers,
    );

  const taskStarted = () =>
    eventually(
      () => consumer!.logs.find('Task started').length === 1 || undefined,
    );

  /** The first task the failed-queue consumer stored. */
  async function storedFailure() {
    const [row] = await eventually(
      async () => {
        const rows = await sql(`SELECT * FROM failed_task`);
        return rows.length ? rows : undefined;
      },
      15_000,
      'the failed task',
    );
    return row;
  }

  it('runs the worker without a shell: every argument arrives literally', async () => {
    consumer = await givenConsumer({workersDir});
    const run = await givenRun({worker_id: 1});
    const params = {
      a: '; rm -rf /',
      b: '$(id)',
      c: '`id`',
      d: 'two words',
      e: 'line1\nline2',
      f: '"quoted" & |',
      n: 5,
      o: {x: [1, 2]},
    };
    await publishTask(
      {
        type: 'worker',
        id: 1,
        scheduler_id: run.schedulerId,
        params_scheduler: JSON.stringify(params),
      },
      run.headers,
    );
    await eventually(
      async () => (await ledger(run.executionId)).status === 'succeeded',
      10_000,
      'success',
    );
    const args = readFileSync(record('record-args'), 'utf8')
      .split('\0')
      .slice(0, -1);
    expect(args).to.deepEqual([
      'a=; rm -rf /',
      'b=$(id)',
      'c=`id`',
      'd=two words',
      'e=line1\nline2',
      'f="quoted" & |',
      'n=5',
      'o={"x":[1,2]}',
      `scheduler_id=${run.schedulerId}`,
    ]);
    const row = await ledger(run.executionId);
    expect(row).to.containDeep({
      status: 'succeeded',
      attempts: 1,
      last_error: null,
    });
    expect(row.duration_ms).to.be.a.Number();
    expect(row.started_at).to.not.be.null();
    const [started] = consumer.logs.find('Task started');
    expect(started).to.containDeep({
      context: undefined === started.context ? undefined : started.context,
      type: 'worker',
      id: 1,
      scheduler_id: run.schedulerId,
      execution_key: 'cron-2026-11-21-10-00',
      attempt: 1,
    });
    expect(
      consumer.logs.find('Task succeeded')[0].duration_ms,
    ).to.be.a.Number();
  });

  it('retries with growing delays (200/400/800 ms), runs max+1 times, then parks the task', async () => {
    consumer = await givenConsumer({workersDir});
    const run = await givenRun({worker_id: 2});
    await publishTask(
      {
        type: 'worker',
        id: 2,
        scheduler_id: run.schedulerId,
        params_scheduler: '{"mode":"x"}',
      },
      run.headers,
    );
    const stored = await storedFailure();
    const attempts = readFileSync(record('always-fails'), 'utf8')
      .trim()
      .split('\n')
      .map(line => Number(BigInt(line.split(' ').pop()!) / 1_000_000n));
    expect(attempts).to.have.length(TEST_RETRY.maxRetries + 1);
    const gaps = attempts.slice(1).map((t, i) => t - attempts[i]);
    const expected = [200, 400, 800];
    gaps.forEach((gap, i) => {
      // Never shorter than the retry queue's TTL. Longer by the outcome
      // mark, the retry's publish confirm, the start mark and a worker
      // start: tens of ms on an idle machine, 360 ms seen with four test
      // processes on two cores. The slack is 350 ms, or just under the
      // delay itself for the longer tiers: a tier that waited twice its
      // delay (the next tier's) still fails.
      expect(gap).to.be.within(
        expected[i],
        expected[i] + Math.max(350, expected[i] - 1),
      );
    });
    const warnings = consumer.logs.records.filter(r =>
      String(r.msg).startsWith('Scheduling retry'),
    );
    expect(warnings.map(r => r.msg)).to.deepEqual([
      'Scheduling retry 1/3 in 200ms',
      'Scheduling retry 2/3 in 400ms',
      'Scheduling retry 3/3 in 800ms',
    ]);
    expect(warnings.every(r => r.level === 'warn')).to.be.true();

    expect(stored).to.containDeep({
      type: 'worker',
      task_id: 2,
      scheduler_id: run.schedulerId,
      retry_count: 3,
      failed_reason: 'worker exited with code 3',
      params_scheduler: '{"mode":"x"}',
    });
    expect(Number(stored.execution_id)).to.equal(run.executionId);
    const [permanent] = consumer.logs.find('PERMANENTLY FAILED TASK');
    expect(permanent).to.containDeep({
      level: 'error',
      type: 'worker',
      id: 2,
      scheduler_id: run.schedulerId,
      retry_count: 3,
    });
    expect(Date.parse(permanent.failed_at as string)).to.not.be.NaN();
    expect(await ledger(run.executionId)).to.containDeep({
      status: 'failed',
      attempts: 4,
      last_error: 'worker exited with code 3',
    });
    expect(await drainQueue(TASK_QUEUE)).to.have.length(0);
    expect(await drainQueue(FAILED_QUEUE)).to.have.length(0);
  });

  describe("a delivery whose x-execution-id names another scheduler's run (review: it marked that run, whose own message was then dropped)", () => {
    it("parks it without touching that run, and the run's own message still runs and fails on its own", async () => {
      consumer = await givenConsumer({
        workersDir,
        retry: {...TEST_RETRY, maxRetries: 0},
      });
      const victim = await givenRun({worker_id: 2});
      const other = await givenRun({worker_id: 1});
      await publishTask(
        {
          type: 'worker',
          id: 1,
          scheduler_id: other.schedulerId,
          params_scheduler: '{}',
        },
        victim.headers,
      );
      const parked = await storedFailure();
      expect(parked).to.containDeep({
        scheduler_id: other.schedulerId,
        execution_id: null,
        failed_reason: foreignRunReason(victim.executionId, other.schedulerId),
      });
      expect(await ledger(victim.executionId)).to.containDeep({
        status: 'published',
        attempts: 0,
      });
      expect(consumer.logs.find('Task started')).to.have.length(0);
      // The victim's own message: runs, fails, and its failure is kept.
      await publishTask(
        {
          type: 'worker',
          id: 2,
          scheduler_id: victim.schedulerId,
          params_scheduler: '{}',
        },
        victim.headers,
      );
      const [own] = await eventually(async () => {
        const rows = await sql(
          `SELECT * FROM failed_task WHERE execution_id = $1`,
          [victim.executionId],
        );
        return rows.length ? rows : undefined;
      });
      expect(own).to.containDeep({
        scheduler_id: victim.schedulerId,
        failed_reason: 'worker exited with code 3',
      });
      // The failure is parked (and confirmed) before the run is marked
      // failed: a crash between the two leaves a run the sweep fails, not a
      // failure lost. So the mark may come a moment after the stored row.
      const run = await eventually(async () => {
        const row = await ledger(victim.executionId);
        return row.status === 'failed' ? row : undefined;
      });
      expect(run).to.containDeep({status: 'failed', attempts: 1});
    });

    it('parks a reminder (started in its own statement) without touching that run or sending it', async () => {
      consumer = await givenConsumer({workersDir});
      const victim = await givenRun({reminder_id: 1});
      const other = await givenRun({reminder_id: 1});
      await publishTask(
        {
          type: 'reminder',
          id: 1,
          scheduler_id: other.schedulerId,
          params_scheduler: '{}',
        },
        victim.headers,
      );
      const parked = await storedFailure();
      expect(parked.failed_reason).to.equal(
        foreignRunReason(victim.executionId, other.schedulerId),
      );
      expect(await ledger(victim.executionId)).to.containDeep({
        status: 'published',
        attempts: 0,
      });
      expect(await sql(`SELECT id FROM notification`)).to.deepEqual([]);
    });
  });

  describe('a run whose scheduler was deleted before a consumer took it (noticed in review: it ran, unrecorded)', () => {
    const DELETED =
      "Run's scheduler was deleted; delivery acknowledged without running";

    /** The run's message published after its scheduler (and with it the run's row) was deleted. */
    async function publishOrphan(task: {
      worker_id?: number;
      reminder_id?: number;
    }) {
      const run = await givenRun(task);
      await sql(`DELETE FROM scheduler WHERE id = $1`, [run.schedulerId]);
      await publishTask(
        {
          type: task.worker_id ? 'worker' : 'reminder',
          id: task.worker_id ?? task.reminder_id!,
          scheduler_id: run.schedulerId,
          params_scheduler: '{}',
        },
        run.headers,
      );
      return run;
    }

    it('acknowledges a worker run without running it, and says so', async () => {
      consumer = await givenConsumer({workersDir});
      const run = await publishOrphan({worker_id: 1});
      await eventually(
        () => consumer!.logs.find(DELETED).length === 1 || undefined,
      );
      expect(consumer.logs.find(DELETED)[0]).to.containDeep({
        ledger_status: 'scheduler-deleted',
        scheduler_id: run.schedulerId,
        execution_id: run.executionId,
      });
      expect(consumer.logs.find('Task started')).to.have.length(0);
      expect(() => readFileSync(record('record-args'))).to.throw(/ENOENT/);
      expect(await drainQueue(TASK_QUEUE)).to.have.length(0);
      expect(await drainQueue(FAILED_QUEUE)).to.have.length(0);
    });

    it('acknowledges a reminder (started in its own statement) without sending it', async () => {
      consumer = await givenConsumer({workersDir});
      await publishOrphan({reminder_id: 1});
      await eventually(
        () => consumer!.logs.find(DELETED).length === 1 || undefined,
      );
      expect(await sql(`SELECT id FROM notification`)).to.deepEqual([]);
      expect(consumer.logs.find('Task started')).to.have.length(0);
      expect(await drainQueue(TASK_QUEUE)).to.have.length(0);
    });

    it('acknowledges a message of a deleted scheduler that carries no usable execution id (review: it ran)', async () => {
      consumer = await givenConsumer({workersDir});
      const run = await givenRun({worker_id: 1});
      await sql(`DELETE FROM scheduler WHERE id = $1`, [run.schedulerId]);
      await publishWorkerOne(run, {});
      await publishWorkerOne(run, {'x-execution-id': 'abc'});
      await eventually(
        () => consumer!.logs.find(DELETED).length === 2 || undefined,
      );
      expect(consumer.logs.find('Task started')).to.have.length(0);
      expect(() => readFileSync(record('record-args'))).to.throw(/ENOENT/);
    });

    it('still runs a run whose ledger row alone is gone (the 30-day cleanup): its scheduler lives', async () => {
      consumer = await givenConsumer({workersDir});
      const run = await givenRun({worker_id: 1});
      await sql(`DELETE FROM scheduler_execution WHERE id = $1`, [
        run.executionId,
      ]);
      await publishWorkerOne(run);
      await eventually(
        () => consumer!.logs.find('Task succeeded').length === 1 || undefined,
      );
      expect(consumer.logs.find(DELETED)).to.have.length(0);
    });
  });

  it('leaves an execution key header that is no short text out of its log lines and context (review: a 20 KB key made 20 KB lines)', async () => {
    consumer = await givenConsumer({workersDir});
    for (const key of [
      'k'.repeat(20_000),
      42,
      'cron-2026-11-21-10-00\nforged',
    ]) {
      const run = await givenRun({worker_id: 1});
      await publishWorkerOne(run, {...run.headers, 'x-execution-key': key});
      await eventually(
        async () => (await ledger(run.executionId)).status === 'succeeded',
      );
    }
    const lines = consumer.logs.find('Task succeeded');
    expect(lines).to.have.length(3);
    for (const line of lines) expect(line.execution_key).to.be.undefined();
    // A key as the service writes it is kept.
    await publishWorkerOne(await givenRun({worker_id: 1}));
    await eventually(
      () => consumer!.logs.find('Task succeeded').length === 4 || undefined,
    );
    expect(consumer.logs.find('Task succeeded')[3].execution_key).to.equal(
      'cron-2026-11-21-10-00',
    );
  });

  it('fails a missing executable with a reason', async () => {
    consumer = await givenConsumer({
      workersDir,
      retry: {...TEST_RETRY, maxRetries: 0},
    });
    await publishWorkerRun(4);
    const row = await storedFailure();
    expect(row.failed_reason).to.equal('worker executable not found');
  });

  it('stops a worker that runs past its timeout', async () => {
    consumer = await givenConsumer({
      workersDir,
      retry: {...TEST_RETRY, maxRetries: 0},
      taskTimeoutMs: 300,
    });
    await publishWorkerRun(3);
    const row = await storedFailure();
    expect(row.failed_reason).to.match(/^worker timed out after 300 ms/);
  });

  const poison: Array<[string, string | object, RegExp]> = [
    ['not JSON', '{"type": "worker",', /not valid JSON/],
    ['a JSON array', '[1,2]', /not a JSON object/],
    [
      'an unknown type',
      {type: 'email', id: 1, scheduler_id: 1, params_scheduler: '{}'},
      /unknown task type "email"/,
    ],
    [
      'no id',
      {type: 'worker', scheduler_id: 1, params_scheduler: '{}'},
      /lacks a positive integer "id"/,
    ],
    [
      'no scheduler_id',
      {type: 'worker', id: 1, params_scheduler: '{}'},
      /lacks a positive integer "scheduler_id"/,
    ],
    [
      'params that are not a JSON string',
      {type: 'worker', id: 1, scheduler_id: 1, params_scheduler: {a: 1}},
      /params_scheduler/,
    ],
    [
      'a stored worker param key that would become an option',
      {
        type: 'worker',
        id: 1,
        scheduler_id: 1,
        params_scheduler: '{"--delete-everything":"yes"}',
      },
      /worker param key "--delete-everything" must match/,
    ],
    [
      'a stored worker param that shadows scheduler_id',
      {
        type: 'worker',
        id: 1,
        scheduler_id: 1,
        params_scheduler: '{"scheduler_id":99}',
      },
      /"scheduler_id" is reserved/,
    ],
    [
      // Review: writing the reason threw (the engine's stack), and the
      // message was requeued every few seconds for ever.
      'a type nested too deep to write as JSON',
      `{"type":${'['.repeat(50_000)}${']'.repeat(50_000)},"id":1,"scheduler_id":1}`,
      /unknown task type \[unreadable list\]/,
    ],
    [
      'a type of 1 MB (the reason stays short)',
      {type: 'x'.repeat(1_000_000), id: 1, scheduler_id: 1},
      /^unknown task type "x{99}…\[cut\]; expected one of/,
    ],
    [
      // Review: every statement naming it failed "out of range", and the
      // message was requeued for ever, holding the consumer's one slot.
      "a scheduler_id above PostgreSQL's integer",
      {
        type: 'worker',
        id: 1,
        scheduler_id: 3_000_000_000,
        params_scheduler: '{}',
      },
      /lacks a positive integer "scheduler_id" \(1 to 2147483647\)/,
    ],
    [
      "a task id above PostgreSQL's integer",
      {type: 'worker', id: 2 ** 31, scheduler_id: 1, params_scheduler: '{}'},
      /lacks a positive integer "id" \(1 to 2147483647\)/,
    ],
    [
      'a NUL byte in the body (jsonb refused it, and no failed task was kept)',
      '{"type":"nope\u0000","id":1,"scheduler_id":1}',
      /not valid JSON/,
    ],
  ];
  for (const [label, body, reason] of poison) {
    it(`parks a poison message (${label}) at once, with its reason and no retry`, async () => {
      consumer = await givenConsumer({workersDir});
      await publishTask(body);
      const row = await storedFailure();
      expect(row.failed_reason).to.match(reason);
      expect(row.retry_count).to.equal(0);
      expect(consumer.logs.find('Task started')).to.have.length(0);
      // Kept as it came, but for what jsonb cannot hold (NUL: U+FFFD).
      if (typeof body === 'string' && body.length < 1000)
        expect((row.payload as {raw: string}).raw).to.equal(
          body.replaceAll('\u0000', '\uFFFD'),
        );
    });
  }

  it('acknowledges a redelivered run that already succeeded without running it again', async () => {
    consumer = await givenConsumer({workersDir});
    const run = await givenRun({worker_id: 1});
    const task = {
      type: 'worker' as const,
      id: 1,
      scheduler_id: run.schedulerId,
      params_scheduler: '{}',
    };
    await publishTask(task, run.headers);
    await eventually(
      async () => (await ledger(run.executionId)).status === 'succeeded',
    );
    await publishTask(task, run.headers);
    await eventually(
      () =>
        consumer!.logs.find(
          'Task already succeeded; redelivery acknowledged without running',
        ).length === 1 || undefined,
    );
    expect(consumer.logs.find('Task started')).to.have.length(1);
    expect((await ledger(run.executionId)).attempts).to.equal(1);
  });

  it('stops a task whose connection dropped mid-run and finishes it once from the redelivery', async () => {
    const {closeVhostConnections} = await import('../fixtures/test-broker');
    await sql(`UPDATE worker SET command = 'slow-first' WHERE id = 3`);
    consumer = await givenConsumer({workersDir});
    const run = await publishWorkerRun(3);
    await taskStarted();
    await closeVhostConnections();
    // The broker hands the message to whoever consumes next: the old run must not go on beside it.
    await eventually(
      async () =>
        (await ledger(run.executionId)).status === 'succeeded' || undefined,
      15_000,
      'the redelivered run',
    );
    expect(await ledger(run.executionId)).to.containDeep({
      status: 'succeeded',
      attempts: 2,
    });
    expect(readFileSync(record('slow'), 'utf8')).to.equal(
      'start\nstart\ndone\n',
    );
    expect(await drainQueue(TASK_QUEUE)).to.have.length(0);
  });

  it('on shutdown stops a task that outlives the grace and requeues its message', async () => {
    consumer = await givenConsumer({workersDir});
    const run = await publishWorkerRun(3);
    await taskStarted();
    const stopping = consumer;
    consumer = undefined;
    await stopping.stop(200);
    expect(
      stopping.logs.find('Task interrupted by shutdown; message requeued'),
    ).to.have.length(1);
    expect((await ledger(run.executionId)).status).to.equal('published');
    const requeued = await drainQueue(TASK_QUEUE);
    expect(requeued).to.have.length(1);
    expect(JSON.parse(requeued[0].content.toString()).scheduler_id).to.equal(
      run.schedulerId,
    );
  });

  it('on shutdown lets a task that fits the grace finish and acks it', async () => {
    consumer = await givenConsumer({workersDir});
    const run = await publishWorkerRun(3);
    await taskStarted();
    const stopping = consumer;
    consumer = undefined;
    await stopping.stop(5000);
    expect((await ledger(run.executionId)).status).to.equal('succeeded');
    expect(await drainQueue(TASK_QUEUE)).to.have.length(0);
  });

  it('runs a report in a child process, forcing instant delivery', async () => {
    consumer = await givenConsumer({workersDir});
    const run = await givenRun({report_id: 1});
    const params = {
      controller: 'SelfCheckReport',
      options_interface: {delivery: {instant: false}},
    };
    await publishTask(
      {
        type: 'report',
        id: 1,
        scheduler_id: run.schedulerId,
        params_scheduler: JSON.stringify(params),
      },
      run.headers,
    );
    await eventually(
      async () => (await ledger(run.executionId)).status === 'succeeded',
    );
    const [completed] = consumer.logs.find('Report completed');
    expect((completed.summary as {instant: boolean}).instant).to.be.true();
  });

  it('fails a report whose child reports an error over IPC and exits 1', async () => {
    consumer = await givenConsumer({
      workersDir,
      retry: {...TEST_RETRY, maxRetries: 0},
    });
    const run = await givenRun({report_id: 1});
    const params = {
      controller: 'SelfCheckReport',
      report_params: {fail_with: 'source table missing'},
    };
    await publishTask(
      {
        type: 'report',
        id: 1,
        scheduler_id: run.schedulerId,
        params_scheduler: JSON.stringify(params),
      },
      run.headers,
    );
    const row = await storedFailure();
    expect(row.failed_reason).to.equal('report failed: source table missing');
    const [failed] = consumer.logs.find('Report failed');
    expect(failed.stack).to.match(/source table missing/);
  });

  it('sends a reminder to its users and group members, each once', async () => {
    consumer = await givenConsumer({workersDir});
    const [group] = await sql<{id: number}>(
      `INSERT INTO user_group (name) VALUES ('ops') RETURNING id`,
    );
    const users = await sql<{id: number}>(
      `INSERT INTO app_user (email, name, password_hash, role, group_id, active) VALUES
         ('a@x.io', 'A', 'h', 'viewer', $1, true),
         ('b@x.io', 'B', 'h', 'viewer', $1, true),
         ('c@x.io', 'C', 'h', 'viewer', NULL, true),
         ('d@x.io', 'D', 'h', 'viewer', $1, false)
       RETURNING id`,
      [group.id],
    );
    await sql(
      `UPDATE reminder SET message = 'Standup in 5', user_ids = $1, group_ids = $2 WHERE id = 1`,
      [JSON.stringify([users[0].id, users[2].id]), JSON.stringify([group.id])],
    );
    const run = await givenRun({reminder_id: 1});
    await publishTask(
      {
        type: 'reminder',
        id: 1,
        scheduler_id: run.schedulerId,
        params_scheduler: '{}',
      },
      run.headers,
    );
    await eventually(
      async () => (await ledger(run.executionId)).status === 'succeeded',
    );
    const notes = await sql<{user_id: number; body: string}>(
      `SELECT user_id, body FROM notification ORDER BY user_id`,
    );
    expect(notes.map(n => n.user_id)).to.deepEqual([
      users[0].id,
      users[1].id,
      users[2].id,
    ]);
    expect(notes.every(n => n.body === 'Standup in 5')).to.be.true();
  });
});
