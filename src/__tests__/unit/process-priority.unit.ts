import {expect} from '@loopback/testlab';
import {ConfigError} from '../../config';
import {
  applyProcessPriority,
  PriorityControl,
} from '../../process/process-priority';

/** What os.setPriority throws when the system refuses (Node's SystemError shape). */
function systemError(code: string): Error {
  return Object.assign(
    new Error(
      `A system error occurred: uv_os_setpriority returned ${code} (permission denied)`,
    ),
    {code: 'ERR_SYSTEM_ERROR', info: {code, syscall: 'uv_os_setpriority'}},
  );
}

/** A process that started at `startedAt` and records what it was asked. */
function processAt(
  startedAt: number,
  refusedWith?: string,
): PriorityControl & {asked: number[]} {
  const asked: number[] = [];
  return {
    asked,
    current: () => startedAt,
    setEveryThread: nice => {
      asked.push(nice);
      if (refusedWith) throw systemError(refusedWith);
    },
  };
}

function refusal(nice: number, startedAt: number, code: string): ConfigError {
  try {
    applyProcessPriority(nice, processAt(startedAt, code));
  } catch (error) {
    return error as ConfigError;
  }
  throw new Error('applyProcessPriority did not refuse');
}

describe('applyProcessPriority', () => {
  it('leaves the priority alone when PROCESS_NICE is unset', () => {
    const process = processAt(0);
    applyProcessPriority(undefined, process);
    expect(process.asked).to.deepEqual([]);
  });

  it('asks the system for the value given', () => {
    const process = processAt(0);
    applyProcessPriority(-7, process);
    expect(process.asked).to.deepEqual([-7]);
  });

  it('asks for 0, not -0, which aborts Node', () => {
    const process = processAt(0);
    applyProcessPriority(-0, process);
    expect(Object.is(process.asked[0], 0)).to.be.true();
  });

  it('refuses to start as a configuration error naming PROCESS_NICE, with what a raise lacks', () => {
    for (const code of ['EACCES', 'EPERM']) {
      const error = refusal(-10, 0, code);
      expect(error).to.be.instanceOf(ConfigError);
      expect(error.variable).to.equal('PROCESS_NICE');
      expect(error.message).to.match(
        new RegExp(`^PROCESS_NICE \\(-10\\) cannot be applied: .*${code}`),
      );
      expect(error.message).to.containEql('CAP_SYS_NICE');
      expect(error.message).to.containEql('RLIMIT_NICE');
    }
  });

  it('calls any value below the start a raise: 3 for a process started at nice 5', () => {
    const error = refusal(3, 5, 'EACCES');
    expect(error.message).to.containEql('started at (5)');
    expect(error.message).to.containEql('CAP_SYS_NICE');
  });

  it('names no privilege where none would help', () => {
    // Going up needs none: another cause is reported as it is.
    const error = refusal(5, 0, 'ESRCH');
    expect(error.variable).to.equal('PROCESS_NICE');
    expect(error.message).to.containEql('ESRCH');
    expect(error.message).to.not.containEql('CAP_SYS_NICE');
  });
});
