/** Longest file name we produce, extension included (common file systems allow 255 bytes). */
export const MAX_FILENAME_LENGTH = 150;

/**
 * A file name safe for a Content-Disposition header, an attachment and a
 * temporary file: no path separators, no control characters, no leading dots
 * (so never `.` or `..`), no Unicode format characters, at most MAX_FILENAME_LENGTH characters, ending in
 * `extension`. An empty result becomes `report`.
 */
export function sanitiseFileName(name: string, extension: string): string {
  const ext = `.${extension}`;
  let base = name
    // eslint-disable-next-line no-control-regex
    .replace(/[\u0000-\u001f\u007f-\u009f]/g, '')
    // Format characters (bidi overrides such as U+202E, zero widths) and line/paragraph separators.
    .replace(/[\p{Cf}\u2028\u2029]/gu, '')
    .replace(/[/\\:*?"<>|]/g, '_')
    .replace(/\s+/g, ' ')
    .trim()
    .replace(/^[.\s_]+/, '');
  if (base.toLowerCase().endsWith(ext.toLowerCase())) {
    base = base.slice(0, -ext.length);
  }
  base = base.replace(/[.\s]+$/, '');
  base = Array.from(base)
    .slice(0, MAX_FILENAME_LENGTH - ext.length)
    .join('');
  return `${base || 'report'}${ext}`;
}
