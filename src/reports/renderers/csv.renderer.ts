import {stringify} from 'csv-stringify';
import {Readable, Writable} from 'node:stream';
import {pipeline} from 'node:stream/promises';
import type {ReportRow} from '../report';
import {cellText, RenderInput, ReportRenderer} from './renderer';

/** RFC 4180: CRLF line ends, a header line, fields quoted when they need it. */
export const CsvRenderer: ReportRenderer = {
  contentType: 'text/csv; charset=utf-8',
  extension: 'csv',
  async render(input: RenderInput, out: Writable): Promise<number> {
    let count = 0;
    const keys = input.columns.map(column => column.key);
    async function* records(rows: AsyncIterable<ReportRow>) {
      for await (const row of rows) {
        count++;
        yield keys.map(key => cellText(row[key]));
      }
    }
    await pipeline(
      Readable.from(records(input.rows)),
      stringify({
        header: true,
        columns: input.columns.map(column => column.header),
        record_delimiter: 'windows',
      }),
      out,
    );
    return count;
  },
};
