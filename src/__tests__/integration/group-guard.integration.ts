import {expect} from '@loopback/testlab';
import {spawn} from 'node:child_process';
import {mkdtempSync, readFileSync, rmSync, writeFileSync} from 'node:fs';
import {tmpdir} from 'node:os';
import path from 'node:path';
import {GroupGuard} from '../../executors/group-guard';
import {eventually} from '../fixtures/test-consumer';

/** Running, as opposed to gone or a zombie nobody reaped yet. */
function isRunning(pid: number): boolean {
  try {
    const state = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1];
    return !state.startsWith('Z');
  } catch {
    return false;
  }
}

/**
 * Review finding: after a consumer's kill -9, the worker itself died
 * (PR_SET_PDEATHSIG) but a process it started kept running and did the
 * task's work again beside the redelivered copy (the same for stay-alive
 * workers and their supervisor).
 */
describe('group guard: what a worker started dies with its consumer', () => {
  let dir: string;
  const leftovers: number[] = [];

  before(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'group-guard-'));
    // A wrapper that does not exec: its child outlives it unless killed.
    writeFileSync(
      path.join(dir, 'wrapper'),
      `#!/bin/sh\nsleep 300 &\necho $! > "$1"\nwait\n`,
      {mode: 0o755},
    );
  });
  after(() => {
    for (const pid of leftovers) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // Gone, as it should be.
      }
    }
    rmSync(dir, {recursive: true, force: true});
  });

  /** The grandchild's pid, once the wrapper wrote it to `file`. */
  const grandchildOf = async (file: string) => {
    const pid = await eventually(() => {
      try {
        return Number(readFileSync(file, 'utf8')) || undefined;
      } catch {
        return undefined;
      }
    });
    leftovers.push(pid);
    return pid;
  };

  it('kills the guarded groups, and only those, when its process ends', async () => {
    const guard = new GroupGuard();
    const spawnWrapper = (name: string) =>
      spawn(path.join(dir, 'wrapper'), [path.join(dir, name)], {
        detached: true,
        stdio: 'ignore',
      });
    const guarded = spawnWrapper('guarded.pid');
    const released = spawnWrapper('released.pid');
    guard.guard(guarded.pid!);
    guard.guard(released.pid!);
    guard.release(released.pid!);
    const [inGuarded, inReleased] = [
      await grandchildOf(path.join(dir, 'guarded.pid')),
      await grandchildOf(path.join(dir, 'released.pid')),
    ];
    guard.end();
    await eventually(() => !isRunning(inGuarded) || undefined, 5000);
    expect(isRunning(inReleased)).to.be.true();
    process.kill(-released.pid!, 'SIGKILL');
  });

  it('starts a new guardian when the one it had was killed (review: a dead one was kept for good)', async () => {
    const guard = new GroupGuard();
    const first = spawn(path.join(dir, 'wrapper'), [path.join(dir, 'a.pid')], {
      detached: true,
      stdio: 'ignore',
    });
    guard.guard(first.pid!);
    await grandchildOf(path.join(dir, 'a.pid'));
    const killed = guard.guardianPid!;
    process.kill(killed, 'SIGKILL');
    await eventually(() => !isRunning(killed) || undefined);
    // Gone from /proc is not yet seen by this process: its exit event comes
    // on a later turn (CI, under load, guarded the next worker in between).
    await eventually(() => guard.guardianExited || undefined);
    const second = spawn(path.join(dir, 'wrapper'), [path.join(dir, 'b.pid')], {
      detached: true,
      stdio: 'ignore',
    });
    guard.guard(second.pid!);
    expect(guard.guardianPid).to.not.equal(killed);
    const inSecond = await grandchildOf(path.join(dir, 'b.pid'));
    guard.end();
    await eventually(() => !isRunning(inSecond) || undefined, 5000);
    process.kill(-first.pid!, 'SIGKILL');
  });

  it("kills a worker's own child when its consumer is killed with kill -9", async () => {
    const pidFile = path.join(dir, 'consumer-child.pid');
    const tiedSpawn = path.resolve(__dirname, '../../executors/tied-spawn.js');
    // A stand-in consumer: spawns the worker as the consumer does, then waits.
    const consumer = spawn(
      process.execPath,
      [
        '-e',
        `require(${JSON.stringify(tiedSpawn)}).spawnTiedToParent(${JSON.stringify(
          path.join(dir, 'wrapper'),
        )}, [${JSON.stringify(pidFile)}], {detached: true, stdio: 'ignore'});
         console.log('spawned');
         setInterval(() => undefined, 1000);`,
      ],
      {stdio: ['ignore', 'pipe', 'ignore']},
    );
    // Killed once the worker runs, as a consumer dies mid-task.
    await new Promise(resolve => consumer.stdout!.once('data', resolve));
    const grandchild = await grandchildOf(pidFile);
    expect(isRunning(grandchild)).to.be.true();
    consumer.kill('SIGKILL');
    await eventually(
      () => !isRunning(grandchild) || undefined,
      15_000,
      'the worker child to die with its consumer',
    );
  });
});
