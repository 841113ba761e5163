/** The CSV reader and writer: RFC 4180 quoting, physical line numbers, and a property-based round trip. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { csvLine, parseCsv } from '../../../src/edge/devicehub/csv.js';

test('quotes, commas, line breaks, CRLF, BOM and blank lines', () => {
  const text = '\ufeffa,b,c\r\n"x, y","say ""hi""","two\nlines"\r\n\r\nlast,,\n';
  const { records, error } = parseCsv(text);
  assert.equal(error, undefined);
  assert.deepEqual(records, [
    { line: 1, fields: ['a', 'b', 'c'] },
    { line: 2, fields: ['x, y', 'say "hi"', 'two\nlines'] },
    { line: 5, fields: ['last', '', ''] },
  ]);
});

test('an unclosed quote is reported on the line it opens', () => {
  const { records, error } = parseCsv('a,b\n1,2\n"open,3\n4,5\n');
  assert.deepEqual(
    records.map((r) => r.line),
    [1, 2],
  );
  assert.deepEqual(error, { line: 3, reason: 'a quoted field is not closed' });
});

test('round trip: any fields written by csvLine read back the same', () => {
  const field = fc.string({ unit: fc.constantFrom('a', 'Z', '1', ' ', ',', '"', '\n', '\r\n', 'é', ';') });
  fc.assert(
    fc.property(
      fc.array(fc.array(field, { minLength: 2, maxLength: 6 }), { minLength: 1, maxLength: 20 }),
      (rows) => {
        const text = rows.map(csvLine).join('\r\n') + '\r\n';
        const parsed = parseCsv(text);
        return (
          parsed.error === undefined &&
          JSON.stringify(parsed.records.map((r) => r.fields)) === JSON.stringify(rows)
        );
      },
    ),
  );
});
