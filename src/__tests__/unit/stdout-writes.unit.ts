import {expect} from '@loopback/testlab';
import {spawn} from 'node:child_process';
import {once} from 'node:events';
import path from 'node:path';
import {Writable} from 'node:stream';
import {gatherTurnWrites} from '../../logging/stdout-writes';

/** A stream that records each write it was handed as one batch. */
function recordingStream() {
  const batches: string[][] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      batches.push([String(chunk)]);
      done();
    },
    writev(chunks, done) {
      batches.push(chunks.map(c => String(c.chunk)));
      done();
    },
  });
  return {stream, batches};
}

const nextTurn = () => new Promise(resolve => setImmediate(resolve));

describe('LOG_WRITE_MODE=turn: a turn of log lines in one write', () => {
  it("writes a turn's lines together, in order, once the turn's callbacks ran", async () => {
    const {stream, batches} = recordingStream();
    gatherTurnWrites(stream, () => undefined);
    for (let i = 0; i < 100; i++) stream.write(`line ${i}\n`);
    // Promises settled in the same turn still join it.
    await Promise.resolve();
    stream.write('line 100\n');
    expect(batches).to.have.length(0);
    await nextTurn();
    expect(batches).to.have.length(1);
    expect(batches[0]).to.eql(
      Array.from({length: 101}, (_, i) => `line ${i}\n`),
    );
    stream.write('next turn\n');
    await nextTurn();
    expect(batches).to.eql([batches[0], ['next turn\n']]);
  });

  it('flushes what the turn holds when the process exits', async () => {
    const {stream, batches} = recordingStream();
    let atExit: (() => void) | undefined;
    gatherTurnWrites(stream, flush => (atExit = flush));
    stream.write('last words\n');
    atExit!();
    expect(batches).to.eql([['last words\n']]);
    // Nothing left for the turn's own flush to do.
    await nextTurn();
    expect(batches).to.have.length(1);
  });

  it('wraps a stream once, however often it is asked', async () => {
    const {stream, batches} = recordingStream();
    gatherTurnWrites(stream, () => undefined);
    gatherTurnWrites(stream, () => undefined);
    stream.write('a\n');
    stream.write('b\n');
    await nextTurn();
    expect(batches).to.eql([['a\n', 'b\n']]);
    stream.write('c\n');
    await nextTurn();
    expect(batches).to.eql([['a\n', 'b\n'], ['c\n']]);
  });

  it("a real process that calls process.exit mid-turn still writes that turn's lines to its pipe", async () => {
    const module = path.resolve(__dirname, '../../logging/stdout-writes.js');
    const child = spawn(
      process.execPath,
      [
        '-e',
        `require(${JSON.stringify(module)}).gatherTurnWrites(process.stdout);
         for (let i = 0; i < 3; i++) process.stdout.write('line ' + i + '\\n');
         process.exit(3);`,
      ],
      {stdio: ['ignore', 'pipe', 'pipe']},
    );
    let out = '';
    child.stdout.on('data', chunk => (out += String(chunk)));
    const [code] = await once(child, 'exit');
    if (child.stdout.readable) await once(child.stdout, 'end');
    expect(code).to.equal(3);
    expect(out).to.equal('line 0\nline 1\nline 2\n');
  });
});
