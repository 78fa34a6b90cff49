import {once} from 'node:events';
import type {Writable} from 'node:stream';
import {closingOnFailure, RenderInput, ReportRenderer} from './renderer';

/**
 * .xlsx through exceljs' streaming writer: each row is committed (written
 * out) as it arrives. Dates are real date cells, integers numbers.
 */
export const ExcelRenderer: ReportRenderer = {
  contentType:
    'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
  extension: 'xlsx',
  async render(input: RenderInput, out: Writable): Promise<number> {
    // Loaded on first use: processes that never write .xlsx don't carry it.
    const {default: ExcelJS} = await import('exceljs');
    return closingOnFailure(out, async watch => {
      const workbook = new ExcelJS.stream.xlsx.WorkbookWriter({
        stream: out,
        useStyles: true,
        useSharedStrings: false,
      });
      workbook.title = input.title;
      workbook.subject = input.subtitle;
      const sheet = workbook.addWorksheet(input.title.slice(0, 31), {
        views: [{state: 'frozen', ySplit: 1}],
      });
      sheet.columns = input.columns.map(column => ({
        header: column.header,
        key: column.key,
        width: Math.max(column.width, column.header.length + 2),
        style:
          column.type === 'datetime'
            ? {numFmt: 'yyyy-mm-dd hh:mm:ss'}
            : undefined,
      }));
      sheet.getRow(1).font = {bold: true};
      sheet.getRow(1).commit();
      let count = 0;
      for await (const row of input.rows) {
        sheet.addRow(row).commit();
        count++;
        // The zip stream buffers what the file cannot take yet: let it drain.
        if (out.writableNeedDrain) await watch.race(once(out, 'drain'));
        if (count % 500 === 0) await watch.check();
      }
      sheet.commit();
      await watch.race(workbook.commit());
      await watch.done;
      return count;
    });
  },
};
