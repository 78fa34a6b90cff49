import {expect} from '@loopback/testlab';
import {parse} from 'csv-parse/sync';
import ExcelJS from 'exceljs';
import {createWriteStream} from 'node:fs';
import {mkdtemp, readFile, rm} from 'node:fs/promises';
import {tmpdir} from 'node:os';
import path from 'node:path';
import {RENDERERS} from '../../reports/renderers';
import {pdfText} from '../fixtures/pdf-text';
import {cellText} from '../../reports/renderers/renderer';
import type {ReportColumn, ReportRow} from '../../reports/report';

const COLUMNS: ReportColumn[] = [
  {key: 'id', header: 'Id', type: 'integer', width: 5},
  {key: 'name', header: 'Name', type: 'text', width: 30},
  {key: 'at', header: 'At', type: 'datetime', width: 20},
  {key: 'note', header: 'Note', type: 'text', width: 20},
];

/** Rows with what breaks naive writers: separators, quotes, line breaks, nulls, non-ASCII. */
function givenRows(count: number): ReportRow[] {
  return Array.from({length: count}, (_, i) => ({
    id: i + 1,
    name: i % 3 === 0 ? `Müller, "Kunde" ${i}` : `Row ${i}`,
    at: new Date(Date.UTC(2026, 10, 21, 6, i % 60, 0)),
    note: i % 4 === 0 ? null : i % 5 === 0 ? 'two\r\nlines' : `n${i}`,
  }));
}

async function* stream(rows: ReportRow[]): AsyncGenerator<ReportRow> {
  for (const row of rows) yield row;
}

describe('report renderers (files read back)', () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'report-renderers-'));
  });
  after(() => rm(dir, {recursive: true, force: true}));

  async function render(format: 'CSV' | 'Excel' | 'PDF', rows: ReportRow[]) {
    const file = path.join(dir, `out.${RENDERERS[format].extension}`);
    const count = await RENDERERS[format].render(
      {
        title: 'Test report',
        subtitle: 'for tests',
        columns: COLUMNS,
        rows: stream(rows),
      },
      createWriteStream(file),
    );
    return {count, file};
  }

  it('writes RFC 4180 CSV that parses back to the source rows', async () => {
    const rows = givenRows(250);
    const {count, file} = await render('CSV', rows);
    expect(count).to.equal(250);
    const text = await readFile(file, 'utf8');
    expect(text.startsWith('Id,Name,At,Note\r\n')).to.be.true();
    const records: string[][] = parse(text, {record_delimiter: '\r\n'});
    expect(records[0]).to.deepEqual(['Id', 'Name', 'At', 'Note']);
    expect(records.slice(1)).to.deepEqual(
      rows.map(row => COLUMNS.map(c => cellText(row[c.key]))),
    );
  });

  it('writes CSV that no spreadsheet evaluates as a formula and no reader splits on a lone CR', async () => {
    const hostile = [
      '=HYPERLINK("http://x")',
      '+1+2',
      '-2+3',
      '@SUM(A1)',
      '\tx',
      '\rx',
      'a\rb',
      'c\nd',
    ];
    const rows: ReportRow[] = hostile.map((name, i) => ({
      id: -(i + 1),
      name,
      at: null,
      note: 'ok',
    }));
    const {file} = await render('CSV', rows);
    const text = await readFile(file, 'utf8');
    const records: string[][] = parse(text, {record_delimiter: '\r\n'});
    expect(records.slice(1).map(r => r[1])).to.deepEqual(
      hostile.map(value => (/^[=+\-@\t\r]/.test(value) ? `'${value}` : value)),
    );
    // Negative numbers stay numbers.
    expect(records.slice(1).map(r => r[0])).to.deepEqual(
      hostile.map((_, i) => String(-(i + 1))),
    );
    // A lone CR or LF never appears outside quotes: each record is one CRLF-ended line.
    for (const line of text.split('\r\n').slice(1, -1)) {
      expect(line.split(',')[1]).to.match(/^"|^[^\r\n]*$/);
    }
    expect(text).to.containEql('"a\rb"');
  });

  it('writes .xlsx whose cells read back (with exceljs) as the source values', async () => {
    const rows = givenRows(300);
    const {count, file} = await render('Excel', rows);
    expect(count).to.equal(300);
    const workbook = new ExcelJS.Workbook();
    await workbook.xlsx.readFile(file);
    const sheet = workbook.worksheets[0];
    expect(sheet.name).to.equal('Test report');
    expect(sheet.rowCount).to.equal(301);
    expect((sheet.getRow(1).values as unknown[]).slice(1)).to.deepEqual([
      'Id',
      'Name',
      'At',
      'Note',
    ]);
    rows.forEach((row, i) => {
      const cells = sheet.getRow(i + 2);
      expect(cells.getCell(1).value).to.equal(row.id);
      expect(cells.getCell(2).value).to.equal(row.name);
      expect((cells.getCell(3).value as Date).toISOString()).to.equal(
        (row.at as Date).toISOString(),
      );
      // XML reads every line break back as LF (end-of-line normalisation).
      expect(cells.getCell(4).value ?? null).to.equal(
        typeof row.note === 'string' ? row.note.replace(/\r\n/g, '\n') : null,
      );
    });
  });

  it('writes a PDF whose extracted text holds every header and cell, over several pages', async () => {
    const rows: ReportRow[] = givenRows(120).map(row => ({
      ...row,
      // pdfkit's standard fonts are WinAnsi: keep PDF data to one line of Latin-1.
      note:
        typeof row.note === 'string' ? row.note.replace(/\r\n/g, ' ') : null,
    }));
    const {count, file} = await render('PDF', rows);
    expect(count).to.equal(120);
    const result = await pdfText(await readFile(file));
    expect(result.total).to.be.greaterThan(1);
    expect(result.text).to.containEql('Test report');
    const lines = result.text
      .split('\n')
      .map(line => line.replace(/\s+/g, ' ').trim());
    for (const row of rows) {
      const expected = COLUMNS.map(c => cellText(row[c.key]))
        .filter(text => text !== '')
        .join(' ');
      expect(lines).to.containEql(expected);
    }
    // The header is repeated on every page.
    expect(lines.filter(line => line === 'Id Name At Note')).to.have.length(
      result.total,
    );
  });

  it('renders an empty report in every format', async () => {
    for (const format of ['CSV', 'Excel', 'PDF'] as const) {
      const {count} = await render(format, []);
      expect(count).to.equal(0);
    }
  });
});
