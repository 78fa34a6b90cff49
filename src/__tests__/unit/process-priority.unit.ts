import {expect} from '@loopback/testlab';
import {ConfigError} from '../../config';
import {applyProcessPriority} from '../../process/process-priority';

/** What os.setPriority throws when the system refuses (Node's SystemError shape). */
function systemError(code: string): Error {
  return Object.assign(
    new Error(
      `A system error occurred: uv_os_setpriority returned ${code} (permission denied)`,
    ),
    {code: 'ERR_SYSTEM_ERROR', info: {code, syscall: 'uv_os_setpriority'}},
  );
}

function refusal(nice: number, code: string): ConfigError {
  try {
    applyProcessPriority(nice, () => {
      throw systemError(code);
    });
  } catch (error) {
    return error as ConfigError;
  }
  throw new Error('applyProcessPriority did not refuse');
}

describe('applyProcessPriority', () => {
  it('leaves the priority alone when PROCESS_NICE is unset', () => {
    const asked: number[] = [];
    applyProcessPriority(undefined, nice => asked.push(nice));
    expect(asked).to.deepEqual([]);
  });

  it('asks the system for the value given', () => {
    const asked: number[] = [];
    applyProcessPriority(-7, nice => asked.push(nice));
    expect(asked).to.deepEqual([-7]);
  });

  it('refuses to start as a configuration error naming PROCESS_NICE, with the capability a negative value lacks', () => {
    for (const code of ['EACCES', 'EPERM']) {
      const error = refusal(-10, code);
      expect(error).to.be.instanceOf(ConfigError);
      expect(error.variable).to.equal('PROCESS_NICE');
      expect(error.message).to.match(
        new RegExp(`^PROCESS_NICE \\(-10\\) cannot be applied: .*${code}`),
      );
      expect(error.message).to.containEql('CAP_SYS_NICE');
    }
  });

  it('names no capability where none would help', () => {
    // A positive value needs no privilege: another cause is reported as it is.
    const error = refusal(5, 'ESRCH');
    expect(error.variable).to.equal('PROCESS_NICE');
    expect(error.message).to.containEql('ESRCH');
    expect(error.message).to.not.containEql('CAP_SYS_NICE');
  });
});
