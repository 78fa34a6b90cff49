import type {OutputFormat} from '../report-options';
import {CsvRenderer} from './csv.renderer';
import {ExcelRenderer} from './excel.renderer';
import {PdfRenderer} from './pdf.renderer';
import type {ReportRenderer} from './renderer';

export const RENDERERS: Readonly<Record<OutputFormat, ReportRenderer>> = {
  CSV: CsvRenderer,
  Excel: ExcelRenderer,
  PDF: PdfRenderer,
};

export type {ReportRenderer, RenderInput} from './renderer';
