/**
 * The JSON body parser of every service: Fastify's own (prototype-poisoning checks included), with
 * errors for people: what is wrong and where (line and column), instead of a bare error code.
 */
import type { FastifyInstance } from 'fastify';
import { AppError, ERRORS } from '../errors.js';

export function installJsonBodyParser(app: FastifyInstance): void {
  const parse = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    const text = body as string;
    if (text.trim() === '') {
      done(
        new AppError(
          ERRORS.invalidJson,
          'the body is empty although content-type is application/json: send a JSON document, or no content-type',
        ),
        undefined,
      );
      return;
    }
    parse(request, text, (err, value) => {
      if (err) done(describeJsonError(text), undefined);
      else done(null, value);
    });
  });
}

/** An error that says what is wrong in `text` and where. */
export function describeJsonError(text: string): AppError {
  let reason: string;
  try {
    JSON.parse(text);
    // Valid JSON that the parser refused: a prototype-poisoning key.
    return new AppError(
      ERRORS.invalidJson,
      'the JSON body must not contain "__proto__" or "constructor" keys',
    );
  } catch (err) {
    reason = (err as Error).message;
  }
  let position: number | undefined;
  const at = / in JSON at position (\d+)/.exec(reason);
  if (at) {
    position = Number(at[1]);
    reason = reason.replace(/ in JSON at position \d+.*$/, '');
  } else {
    // `Unexpected token 'x', "<the body>"... is not valid JSON`: no position; never echo the body.
    const token = /^Unexpected token '(.)'/.exec(reason);
    reason = reason.replace(/, (\.\.\.)?".*$/s, '');
    if (token) position = firstOutsideStrings(text, token[1]!);
  }
  const where = position === undefined ? '' : ` at line ${lineColumn(text, position)}`;
  const hint = /^\s*[A-Za-z0-9_%.-]+=/.test(text)
    ? ' (this looks like a form: send JSON, e.g. {"username":"admin"}, or set content-type: application/x-www-form-urlencoded where a form is accepted)'
    : '';
  return new AppError(ERRORS.invalidJson, `the body is not valid JSON: ${reason}${where}${hint}`);
}

function lineColumn(text: string, position: number): string {
  const before = text.slice(0, position);
  const line = before.split('\n').length;
  const column = position - before.lastIndexOf('\n');
  return `${line}, column ${column}`;
}

function firstOutsideStrings(text: string, ch: string): number | undefined {
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === ch) return i;
  }
  return undefined;
}
