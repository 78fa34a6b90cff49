import {expect} from '@loopback/testlab';
import {fork} from 'node:child_process';
import {once} from 'node:events';
import {REPORT_CHILD} from '../../executors/report.executor';
import {TEST_DATABASE_URL} from '../fixtures/test-database';

describe('report child process', () => {
  it('stops when its consumer goes away before it reported', async () => {
    const child = fork(REPORT_CHILD, [], {
      env: {
        PATH: process.env.PATH ?? '/usr/bin:/bin',
        DATABASE_URL: TEST_DATABASE_URL,
      },
      stdio: ['ignore', 'ignore', 'ignore', 'ipc'],
    });
    await once(child, 'spawn');
    // The IPC channel closing is what a dead consumer looks like from the child.
    child.disconnect();
    const [code] = await once(child, 'exit');
    expect(code).to.equal(1);
  });
});
