/**
 * Transformations are JSONata expressions (https://jsonata.org, the `jsonata` package): the input
 * is the message as it arrived (a DataHub payload `{ value, timestamp, ... }`, or the parsed MQTT
 * payload), `$params` the instance's parameters. A JSONata expression cannot reach the process:
 * it has no I/O, no `require`, no globals. It is evaluated off the main loop, within bounds, by
 * the expression sandbox (expressions.ts).
 */
import { createRequire } from 'node:module';
import type jsonata from 'jsonata';
import { badRequest } from '../../kernel/errors.js';

/** Longest expression accepted (characters). */
export const MAX_EXPRESSION_LENGTH = 16 * 1024;

/** A transformation checked to parse; evaluated by the expression sandbox (expressions.ts). */
export interface Compiled {
  expression: string;
}

// jsonata (a CommonJS package) is required by the first transformation checked: most edges have
// none, and the checks here are synchronous, so a dynamic import() would not do.
let parseJsonata: typeof jsonata | undefined;
const requireHere = createRequire(import.meta.url);

interface JsonataError {
  message?: string;
  position?: number;
  token?: string;
  code?: string;
}

/** Checks that `expression` parses, or throws a 400 that names the position of the error. */
export function compileTransformation(expression: string): Compiled {
  if (expression.trim() === '') throw badRequest('Expression must not be empty');
  if (expression.length > MAX_EXPRESSION_LENGTH)
    throw badRequest(`Expression is longer than ${MAX_EXPRESSION_LENGTH} characters`);
  try {
    (parseJsonata ??= requireHere('jsonata') as typeof jsonata)(expression);
    return { expression };
  } catch (err) {
    const e = err as JsonataError;
    throw badRequest(
      `transformation does not parse at position ${e.position ?? 0}: ${e.message ?? String(err)}` +
        (e.code ? ` (${e.code})` : ''),
      { position: e.position ?? 0, code: e.code, token: e.token },
    );
  }
}

/** A run-time failure of an expression, in one line. */
export function describeEvalError(err: unknown): string {
  const e = err as JsonataError;
  const where = typeof e.position === 'number' ? ` at position ${e.position}` : '';
  return `${e.message ?? String(err)}${where}${e.code ? ` (${e.code})` : ''}`;
}

/**
 * The value a message gives an attribute without a transformation: the `value` of a DataHub
 * payload, else the message itself.
 */
export function plainValue(message: unknown): unknown {
  if (message !== null && typeof message === 'object' && !Array.isArray(message) && 'value' in message)
    return (message as { value: unknown }).value;
  return message;
}

/** JSONata answers `undefined` for "no match" and arrays with a `sequence` flag: make plain JSON. */
export function jsonOf(value: unknown): unknown {
  if (value === undefined) return null;
  if (Array.isArray(value)) return Array.from(value, jsonOf);
  return value;
}
