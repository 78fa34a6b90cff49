import {once} from 'node:events';
import type {Writable} from 'node:stream';
import {
  cellText,
  closingOnFailure,
  RenderInput,
  ReportRenderer,
} from './renderer';

const MARGIN = 30;
const FONT_SIZE = 7;
const ROW_HEIGHT = 10;
const CELL_PADDING = 3;
/** Helvetica's average glyph is about half an em: cut text to fit without measuring it. */
const AVERAGE_GLYPH_EM = 0.52;

/**
 * A landscape A4 table: title, subtitle, a header line repeated on every
 * page. Cells hold one line, cut with "…" when too long. pdfkit writes each
 * page out as it goes, so memory stays flat.
 */
export const PdfRenderer: ReportRenderer = {
  contentType: 'application/pdf',
  extension: 'pdf',
  async render(input: RenderInput, out: Writable): Promise<number> {
    // Loaded on first use: processes that never write PDF don't carry it.
    const {default: PDFDocument} = await import('pdfkit');
    const doc = new PDFDocument({
      size: 'A4',
      layout: 'landscape',
      margin: MARGIN,
      info: {Title: input.title, Subject: input.subtitle},
    });
    return closingOnFailure(out, async watch => {
      doc.pipe(out);
      const tableWidth = doc.page.width - 2 * MARGIN;
      const totalWeight = input.columns.reduce((sum, c) => sum + c.width, 0);
      const widths = input.columns.map(
        c => (c.width / totalWeight) * tableWidth,
      );
      const maxChars = widths.map(width =>
        Math.max(
          1,
          Math.floor((width - CELL_PADDING) / (FONT_SIZE * AVERAGE_GLYPH_EM)),
        ),
      );
      const bottom = doc.page.height - MARGIN - ROW_HEIGHT;
      let y = MARGIN;

      const line = (texts: string[]) => {
        let x = MARGIN;
        texts.forEach((text, i) => {
          const cut =
            text.length > maxChars[i]
              ? `${text.slice(0, maxChars[i] - 1)}…`
              : text;
          doc.text(cut, x, y, {lineBreak: false});
          x += widths[i];
        });
        y += ROW_HEIGHT;
      };
      const header = () => {
        doc.font('Helvetica-Bold').fontSize(FONT_SIZE);
        line(input.columns.map(c => c.header));
        doc
          .moveTo(MARGIN, y - 2)
          .lineTo(MARGIN + tableWidth, y - 2)
          .lineWidth(0.5)
          .stroke();
        doc.font('Helvetica');
      };

      doc
        .font('Helvetica-Bold')
        .fontSize(14)
        .text(input.title, MARGIN, y, {lineBreak: false});
      y += 18;
      doc
        .font('Helvetica')
        .fontSize(8)
        .text(input.subtitle, MARGIN, y, {lineBreak: false});
      y += 16;
      header();
      let count = 0;
      for await (const row of input.rows) {
        if (y > bottom) {
          doc.addPage();
          y = MARGIN;
          header();
        }
        line(input.columns.map(c => cellText(row[c.key])));
        count++;
        if (count % 500 === 0) {
          if (out.writableNeedDrain) await watch.race(once(out, 'drain'));
          await watch.check();
        }
      }
      if (count === 0) line(['(no rows)']);
      doc.end();
      await watch.done;
      return count;
    });
  },
};
