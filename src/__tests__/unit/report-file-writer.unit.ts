import {expect} from '@loopback/testlab';
import {mkdtemp, readFile, rm} from 'node:fs/promises';
import {tmpdir} from 'node:os';
import path from 'node:path';
import {once} from 'node:events';
import type {ReportRow} from '../../reports/report';
import {
  cappedFileWriter,
  ReportTooLargeError,
} from '../../reports/report-limits';
import {ExcelRenderer} from '../../reports/renderers/excel.renderer';
import {PdfRenderer} from '../../reports/renderers/pdf.renderer';

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

describe('Excel and PDF renderers on a failing report file', () => {
  let dir: string;
  // The API ends the process on an unhandled rejection: none may be left.
  let unhandled: unknown[];
  const listen = (reason: unknown) => unhandled.push(reason);
  beforeEach(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'report-render-'));
    unhandled = [];
    process.on('unhandledRejection', listen);
  });
  afterEach(async () => {
    await new Promise(resolve => setTimeout(resolve, 50));
    process.off('unhandledRejection', listen);
    expect(unhandled.map(String)).to.deepEqual([]);
    await rm(dir, {recursive: true, force: true});
  });

  async function* manyRows(count: number) {
    for (let i = 0; i < count; i++)
      yield {id: i, text: `row ${i} `.repeat(20)} as ReportRow;
  }
  const input = (count: number) => ({
    title: 'T',
    subtitle: 'S',
    columns: [
      {key: 'id', header: 'Id', type: 'integer' as const, width: 6},
      {key: 'text', header: 'Text', type: 'text' as const, width: 40},
    ],
    rows: manyRows(count),
  });

  for (const renderer of [ExcelRenderer, PdfRenderer]) {
    it(`${renderer.extension}: rejects, neither hanging nor leaving an unhandled rejection, when the file cannot be written (review: the API exited)`, async () => {
      const out = cappedFileWriter(path.join(dir, 'missing', 'r'), 1 << 30);
      await expect(renderer.render(input(3000), out)).to.be.rejectedWith(
        /ENOENT/,
      );
    });

    it(`${renderer.extension}: rejects with the size cap, once, when the file grows past it`, async () => {
      const out = cappedFileWriter(path.join(dir, 'big'), 20_000);
      await expect(renderer.render(input(3000), out)).to.be.rejectedWith(
        ReportTooLargeError,
      );
    });

    it(`${renderer.extension}: closes the file when the rows fail midway (a timeout, the row cap)`, async () => {
      const out = cappedFileWriter(path.join(dir, 'cut'), 1 << 30);
      async function* failing() {
        yield* manyRows(10);
        throw new Error('cancelled: REPORT_INSTANT_TIMEOUT_MS');
      }
      await expect(
        renderer.render({...input(0), rows: failing()}, out),
      ).to.be.rejectedWith(/cancelled/);
      expect(out.destroyed).to.be.true();
    });
  }
});
