import {expect} from '@loopback/testlab';
import {MAX_FILENAME_LENGTH, sanitiseFileName} from '../../reports/file-name';

describe('report file names', () => {
  it('keeps an ordinary name and adds the extension once', () => {
    expect(sanitiseFileName('sales 2026-11-21', 'pdf')).to.equal(
      'sales 2026-11-21.pdf',
    );
    expect(sanitiseFileName('sales.PDF', 'pdf')).to.equal('sales.pdf');
    expect(sanitiseFileName('sales.csv', 'xlsx')).to.equal('sales.csv.xlsx');
  });

  it('leaves no path separator, parent reference or control character', () => {
    for (const [name, expected] of [
      ['../../etc/passwd', 'etc_passwd.csv'],
      ['/etc/passwd', 'etc_passwd.csv'],
      ['..\\..\\windows\\win.ini', 'windows_win.ini.csv'],
      ['report\u0000.exe\n', 'report.exe.csv'],
      ['a\r\nContent-Type: text/html', 'aContent-Type_ text_html.csv'],
      ['..', 'report.csv'],
      ['', 'report.csv'],
    ]) {
      const safe = sanitiseFileName(name, 'csv');
      expect(safe).to.equal(expected);
      // eslint-disable-next-line no-control-regex
      expect(safe).to.not.match(/[/\\\u0000-\u001f]/);
      expect(safe.startsWith('.')).to.be.false();
    }
  });

  it('strips Unicode format characters and line/paragraph separators', () => {
    expect(sanitiseFileName('invoice\u202Efdp.exe', 'pdf')).to.equal(
      'invoicefdp.exe.pdf',
    );
    expect(
      sanitiseFileName(
        'a\u200Bb\u200Dc\u2066d\uFEFFe\u00ADf\u2028g\u2029h',
        'csv',
      ),
    ).to.equal('abcdefgh.csv');
    expect(sanitiseFileName('\u202E\u2029', 'csv')).to.equal('report.csv');
  });

  it('cuts long names to the limit, extension included', () => {
    const safe = sanitiseFileName('x'.repeat(1000), 'xlsx');
    expect(safe).to.have.length(MAX_FILENAME_LENGTH);
    expect(safe.endsWith('.xlsx')).to.be.true();
  });
});
