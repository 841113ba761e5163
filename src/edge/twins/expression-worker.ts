/**
 * The worker of the expression sandbox (see expressions.ts): evaluates JSONata transformations
 * off the edge's main loop with JSONata's own guardrails (a depth and a time bound per evaluation)
 * and answers the output as JSON text, refused past the output bound before it leaves the worker.
 */
import jsonata from 'jsonata';
import { BoundError, poolOptions, serveJobs } from '../../kernel/sandbox/worker.js';
import { describeEvalError, jsonOf } from './transform.js';
import type { ExpressionJob, ExpressionLimits } from './expressions.js';

const limits = poolOptions() as ExpressionLimits;
/** Compiled expressions by text (bounded: cleared when full). */
const cache = new Map<string, ReturnType<typeof jsonata>>();
const MAX_CACHED = 1000;

function compiled(expression: string): ReturnType<typeof jsonata> {
  let c = cache.get(expression);
  if (!c) {
    if (cache.size >= MAX_CACHED) cache.clear();
    // `timeout` and `stack` are JSONata's guardrails (codes D1012 and D1011), checked at every step.
    c = jsonata(expression, { timeout: limits.timeoutMs, stack: limits.maxDepth } as jsonata.JsonataOptions);
    cache.set(expression, c);
  }
  return c;
}

serveJobs<ExpressionJob, string>(async (job) => {
  let out: unknown;
  try {
    out = await compiled(job.expression).evaluate(job.input as object, { params: job.params });
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (code === 'D1011')
      throw new BoundError(
        'depth',
        `expression depth limit exceeded: more than ${limits.maxDepth} nested steps (D1011)`,
      );
    if (code === 'D1012')
      throw new BoundError(
        'time',
        `expression time limit exceeded: stopped after ${limits.timeoutMs} ms (D1012)`,
      );
    if (err instanceof RangeError)
      throw new BoundError('depth', `expression depth limit exceeded: ${err.message}`);
    throw new Error(describeEvalError(err));
  }
  const text = JSON.stringify(jsonOf(out)) ?? 'null';
  if (text.length > limits.maxOutputBytes)
    throw new BoundError(
      'output',
      `expression output limit exceeded: the result is more than ${limits.maxOutputBytes} bytes of JSON`,
    );
  return text;
});
