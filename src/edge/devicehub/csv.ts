/**
 * CSV of tags, the format `UploadCsv` reads and the export writes (RFC 4180: comma separated,
 * fields with commas, quotes or line breaks in double quotes, `""` for a quote).
 *
 * Columns: the fixed ones below, then one column `Property.<name>` per tag property. An empty
 * property cell means "not given" (the default applies); `MetaData` is a JSON object or empty.
 */
export const FIXED_COLUMNS = [
  'DeviceName',
  'TagName',
  'Name',
  'ValueType',
  'Description',
  'IntervalMs',
  'PublishCoV',
  'TagFormula',
  'MetaData',
] as const;
export const REQUIRED_COLUMNS = ['DeviceName', 'TagName', 'Name', 'ValueType'] as const;
export const PROPERTY_PREFIX = 'Property.';

export interface CsvRecord {
  /** Physical line number (1-based) where the record starts. */
  line: number;
  fields: string[];
}

/** Splits CSV text into records; an unterminated quote is reported on the record it opens. */
export function parseCsv(text: string): { records: CsvRecord[]; error?: { line: number; reason: string } } {
  const records: CsvRecord[] = [];
  const s = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  let i = 0;
  let line = 1;
  const n = s.length;
  while (i < n) {
    const start = line;
    const fields: string[] = [];
    let field = '';
    let quoted = false;
    let atFieldStart = true;
    let ended = false;
    while (i < n) {
      const c = s[i]!;
      if (quoted) {
        if (c === '"') {
          if (s[i + 1] === '"') {
            field += '"';
            i += 2;
          } else {
            quoted = false;
            i++;
          }
        } else {
          if (c === '\n') line++;
          field += c;
          i++;
        }
        continue;
      }
      if (c === '"' && atFieldStart) {
        quoted = true;
        atFieldStart = false;
        i++;
      } else if (c === ',') {
        fields.push(field);
        field = '';
        atFieldStart = true;
        i++;
      } else if (c === '\r' || c === '\n') {
        i += c === '\r' && s[i + 1] === '\n' ? 2 : 1;
        line++;
        ended = true;
        break;
      } else {
        field += c;
        atFieldStart = false;
        i++;
      }
    }
    if (quoted) return { records, error: { line: start, reason: 'a quoted field is not closed' } };
    fields.push(field);
    // Blank lines are skipped.
    if (!(fields.length === 1 && fields[0] === '')) records.push({ line: start, fields });
    if (!ended) break;
  }
  return { records };
}

const needsQuotes = /[",\r\n]/;
export function csvField(value: string): string {
  return needsQuotes.test(value) || value !== value.trim() ? `"${value.replace(/"/g, '""')}"` : value;
}

export function csvLine(values: string[]): string {
  return values.map(csvField).join(',');
}
