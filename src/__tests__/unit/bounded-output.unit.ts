import {expect} from '@loopback/testlab';
import {Readable} from 'node:stream';
import {once} from 'node:events';
import {
  logBoundedLines,
  MAX_LINE_BYTES,
  OutputBudget,
} from '../../executors/bounded-output';
import {LogCapture} from '../fixtures/log-capture';

/** `megabytes` MiB of "x" without a newline, then `tail`, from one reused chunk. */
function hugeLineThen(megabytes: number, tail: string): Readable {
  const chunk = Buffer.alloc(1024 * 1024, 'x');
  return Readable.from(
    (function* () {
      for (let i = 0; i < megabytes; i++) yield chunk;
      yield Buffer.from(tail);
    })(),
  );
}

async function logged(
  stream: Readable,
  budget: OutputBudget,
): Promise<string[]> {
  const logs = new LogCapture();
  logBoundedLines(stream, {name: 'stdout', logger: logs.logger, budget});
  await once(stream, 'end');
  return logs.find('Task output').map(record => record.line as string);
}

describe('bounded output of a child', () => {
  it('cuts a 700 MB line without a newline at the line limit instead of crashing', async () => {
    let cuts = 0;
    const lines = await logged(
      hugeLineThen(700, '\nlast line\n'),
      new OutputBudget(1024 * 1024, () => cuts++),
    );
    expect(lines).to.deepEqual([`${'x'.repeat(MAX_LINE_BYTES)}…`, 'last line']);
    expect(cuts).to.equal(1);
  });

  it('logs at most the budget, then drops the rest and reports the cut once', async () => {
    let cuts = 0;
    const many = Readable.from(
      (function* () {
        for (let i = 0; i < 2000; i++) yield `${String(i).padEnd(999, '.')}\n`;
      })(),
    );
    const lines = await logged(many, new OutputBudget(10_500, () => cuts++));
    const bytes = lines.reduce((sum, line) => sum + line.length, 0);
    expect(bytes).to.be.belowOrEqual(10_500);
    expect(lines).to.have.length(11);
    expect(lines[10]).to.endWith('…');
    expect(cuts).to.equal(1);
  });

  it('keeps lines split across chunks whole and strips CR before LF', async () => {
    const stream = Readable.from([
      Buffer.from('hel'),
      Buffer.from('lo\r\nwor'),
      Buffer.from('ld'),
    ]);
    expect(await logged(stream, new OutputBudget(1000))).to.deepEqual([
      'hello',
      'world',
    ]);
  });
});
