import {stringify} from 'csv-stringify';
import {Readable, Writable} from 'node:stream';
import {pipeline} from 'node:stream/promises';
import type {ReportRow} from '../report';
import {cellText, RenderInput, ReportRenderer} from './renderer';

/**
 * RFC 4180: CRLF line ends, a header line, fields quoted when they need it
 * (any CR or LF included); text that a spreadsheet would run as a formula is
 * prefixed with a quote (OWASP CSV injection).
 */
export const CsvRenderer: ReportRenderer = {
  contentType: 'text/csv; charset=utf-8',
  extension: 'csv',
  async render(input: RenderInput, out: Writable): Promise<number> {
    let count = 0;
    const keys = input.columns.map(column => column.key);
    async function* records(rows: AsyncIterable<ReportRow>) {
      for await (const row of rows) {
        count++;
        // Numbers stay numbers so a negative one is not taken for a formula.
        yield keys.map(key => {
          const value = row[key];
          return typeof value === 'number' ? value : cellText(value);
        });
      }
    }
    await pipeline(
      Readable.from(records(input.rows)),
      stringify({
        header: true,
        columns: input.columns.map(column => column.header),
        record_delimiter: 'windows',
        // Formula injection: a text cell starting with = + - @ TAB CR gets a leading '.
        escape_formulas: true,
        // A lone CR splits the row in common readers: quote any line break.
        quoted_match: /[\r\n]/,
      }),
      out,
    );
    return count;
  },
};
