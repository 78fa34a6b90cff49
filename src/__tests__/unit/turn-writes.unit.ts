import {expect} from '@loopback/testlab';
import {Writable} from 'node:stream';
import {coalesceTurnWrites} from '../../queue/turn-writes';

/** A stream that records each write it is asked to make, as a socket would make syscalls. */
function givenRecordingStream() {
  const writes: string[][] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      writes.push([String(chunk)]);
      done();
    },
    writev(chunks, done) {
      writes.push(chunks.map(c => String(c.chunk)));
      done();
    },
  });
  return {stream, writes};
}

const nextTick = () => new Promise(resolve => process.nextTick(resolve));

describe('coalesceTurnWrites', () => {
  it("sends one turn's frames in one write, in their order", async () => {
    const {stream, writes} = givenRecordingStream();
    coalesceTurnWrites(stream);
    stream.write('ack 1');
    stream.write('ack 2');
    stream.write('publish');
    expect(writes).to.eql([]);
    await nextTick();
    expect(writes).to.eql([['ack 1', 'ack 2', 'publish']]);
  });

  it('starts a new write for the next turn, and keeps backpressure', async () => {
    const {stream, writes} = givenRecordingStream();
    coalesceTurnWrites(stream);
    stream.write('a');
    await nextTick();
    stream.write('b');
    await nextTick();
    expect(writes).to.eql([['a'], ['b']]);
    const big = 'x'.repeat(stream.writableHighWaterMark);
    expect(stream.write(big)).to.be.false();
  });
});
