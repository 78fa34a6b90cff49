import {expect} from '@loopback/testlab';
import {mkdtemp, readFile, rm} from 'node:fs/promises';
import {tmpdir} from 'node:os';
import path from 'node:path';
import {once} from 'node:events';
import {
  cappedFileWriter,
  ReportTooLargeError,
} from '../../reports/report-limits';

describe('cappedFileWriter', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'report-writer-'));
  });
  afterEach(() => rm(dir, {recursive: true, force: true}));

  it('writes the file and refuses more than the cap', async () => {
    const file = path.join(dir, 'ok.csv');
    const writer = cappedFileWriter(file, 10);
    writer.end('a,b\r\n');
    await once(writer, 'finish');
    expect(await readFile(file, 'utf8')).to.equal('a,b\r\n');
    const capped = cappedFileWriter(path.join(dir, 'big.csv'), 3);
    capped.write('abcd');
    const [error] = await once(capped, 'error');
    expect(error).to.be.instanceOf(ReportTooLargeError);
  });

  it('fails the report, not the process, when the file cannot be written (review: an unheard file error was an uncaught exception, which ends the API)', async () => {
    const writer = cappedFileWriter(path.join(dir, 'missing', 'x.csv'), 100);
    writer.write('a,b\r\n');
    const [error] = await once(writer, 'error');
    expect((error as NodeJS.ErrnoException).code).to.equal('ENOENT');
  });

  it('fails a write that comes after the file was closed by a cancel, without an uncaught exception', async () => {
    const writer = cappedFileWriter(path.join(dir, 'cancelled.csv'), 1000);
    writer.write('first\r\n');
    writer.destroy(new Error('cancelled: REPORT_INSTANT_TIMEOUT_MS'));
    const [error] = await once(writer, 'error');
    expect((error as Error).message).to.match(/cancelled/);
    // Anything the renderer still sends goes nowhere and throws nothing.
    writer.write('late\r\n');
    await new Promise(resolve => setTimeout(resolve, 50));
  });
});
