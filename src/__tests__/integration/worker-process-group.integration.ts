import {expect} from '@loopback/testlab';
import {mkdtempSync, readFileSync, rmSync} from 'node:fs';
import {tmpdir} from 'node:os';
import path from 'node:path';
import {watchChild} from '../../executors/child-process';
import {TaskFailure} from '../../executors/task-executor';
import {spawnTiedToParent} from '../../executors/tied-spawn';
import {LogCapture} from '../fixtures/log-capture';

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

async function until(check: () => boolean, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (check()) return true;
    await new Promise(resolve => setTimeout(resolve, 25));
  }
  return check();
}

/** Issue 14, item 5: a worker whose children keep its output pipes open. */
describe('workers in their own process group', () => {
  let dir: string;
  const leftovers: number[] = [];
  beforeEach(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'process-group-'));
  });
  afterEach(() => {
    for (const pid of leftovers.splice(0)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone
      }
    }
    rmSync(dir, {recursive: true, force: true});
  });

  /** A worker that starts `sleep 600 &` (holding our pipes), then `then`. */
  function startWorker(then: string) {
    const pidFile = path.join(dir, 'grandchild.pid');
    const child = spawnTiedToParent(
      '/bin/sh',
      ['-c', `sleep 600 & echo $! > ${pidFile}; ${then}`],
      {shell: false, detached: true, stdio: ['ignore', 'pipe', 'pipe']},
    );
    // The whole group, whatever a test leaves of it.
    leftovers.push(-child.pid!);
    const grandchild = async () => {
      await until(() => {
        try {
          return readFileSync(pidFile, 'utf8').trim() !== '';
        } catch {
          return false;
        }
      }, 5000);
      const pid = Number(readFileSync(pidFile, 'utf8'));
      leftovers.push(pid);
      return pid;
    };
    return {child, grandchild};
  }

  const watch = (
    child: ReturnType<typeof startWorker>['child'],
    logs: LogCapture,
    signal = new AbortController().signal,
  ) =>
    watchChild(child, {
      kind: 'worker',
      logger: logs.logger,
      timeoutMs: 400,
      killGraceMs: 300,
      signal,
    });

  it('ends a timed-out worker and what it started, promptly', async () => {
    const logs = new LogCapture();
    const {child, grandchild} = startWorker('sleep 30');
    const started = Date.now();
    const outcome = watch(child, logs);
    const pid = await grandchild();
    await expect(outcome).to.be.rejectedWith(TaskFailure);
    expect(Date.now() - started).to.be.below(4000);
    expect(await until(() => !alive(pid), 2000)).to.be.true();
  });

  it('stops the whole group on shutdown', async () => {
    const logs = new LogCapture();
    const {child, grandchild} = startWorker('sleep 30');
    const stop = new AbortController();
    const outcome = watchChild(child, {
      kind: 'worker',
      logger: logs.logger,
      timeoutMs: 60_000,
      killGraceMs: 300,
      signal: stop.signal,
    });
    const pid = await grandchild();
    stop.abort();
    await expect(outcome).to.be.rejectedWith(/stopped by shutdown/);
    expect(await until(() => !alive(pid), 2000)).to.be.true();
  });

  it("finishes on the worker's exit and stops what it left running in its group", async () => {
    const logs = new LogCapture();
    const {child, grandchild} = startWorker('echo done; exit 0');
    const started = Date.now();
    const outcome = await watch(child, logs);
    const pid = await grandchild();
    expect(outcome).to.deepEqual({code: 0, signal: null});
    expect(Date.now() - started).to.be.below(3000);
    expect(await until(() => !alive(pid), 2000)).to.be.true();
  });

  it('closes the output of a worker whose leftover ignores SIGTERM, and says so', async () => {
    const logs = new LogCapture();
    const pidFile = path.join(dir, 'stubborn.pid');
    const child = spawnTiedToParent(
      '/bin/sh',
      [
        '-c',
        `sh -c 'trap "" TERM; echo $$ > ${pidFile}; sleep 600' & sleep 0.2; exit 0`,
      ],
      {shell: false, detached: true, stdio: ['ignore', 'pipe', 'pipe']},
    );
    const started = Date.now();
    const outcome = await watch(child, logs);
    leftovers.push(-child.pid!, Number(readFileSync(pidFile, 'utf8')));
    expect(outcome).to.deepEqual({code: 0, signal: null});
    expect(Date.now() - started).to.be.below(3000);
    expect(
      logs.find(
        'worker exited but its output stayed open (a process it started ignored SIGTERM); output closed',
      ),
    ).to.have.length(1);
  });
});
