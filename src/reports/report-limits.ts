import {createWriteStream} from 'node:fs';
import {once} from 'node:events';
import {Writable} from 'node:stream';
import type {ReportRow} from './report';

/** REPORT_MAX_ROWS, REPORT_MAX_BYTES and REPORT_ATTACH_MAX_BYTES. */
export interface ReportLimits {
  maxRows: number;
  maxBytes: number;
  mailAttachmentMaxBytes: number;
}

/** The report is over a cap: it fails as a whole, never sent cut short. */
export class ReportTooLargeError extends Error {
  override name = 'ReportTooLargeError';
  readonly statusCode = 422;
}

/** Yields the rows, failing once there are more than `maxRows`. */
export async function* capRows(
  rows: AsyncIterable<ReportRow>,
  maxRows: number,
): AsyncGenerator<ReportRow> {
  let count = 0;
  for await (const row of rows) {
    if (++count > maxRows) {
      throw new ReportTooLargeError(
        `The report has more than ${maxRows} rows (REPORT_MAX_ROWS); narrow its period or filters`,
      );
    }
    yield row;
  }
}

/**
 * A file writer that fails once more than `maxBytes` were written; it
 * finishes only when the file is closed, so its size can be read at once.
 */
export function cappedFileWriter(file: string, maxBytes: number): Writable {
  const target = createWriteStream(file, {mode: 0o600});
  let written = 0;
  const writer = new Writable({
    write(chunk: Buffer, _encoding, done) {
      written += chunk.length;
      if (written > maxBytes) {
        done(
          new ReportTooLargeError(
            `The report file is larger than ${maxBytes} bytes (REPORT_MAX_BYTES); narrow its period or filters`,
          ),
        );
        return;
      }
      if (target.write(chunk)) done();
      else target.once('drain', () => done());
    },
    final(done) {
      target.end();
      once(target, 'close').then(() => done(), done);
    },
    destroy(error, done) {
      target.destroy();
      done(error);
    },
  });
  // The file's own failures (a directory gone, a full disk, a write racing a
  // cancel) fail the report; unheard, they would be an uncaught exception,
  // which ends the process.
  target.on('error', error => writer.destroy(error));
  return writer;
}
