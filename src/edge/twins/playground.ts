/**
 * The transformation playground (`PlaygroundMessages`): a JSONata expression evaluated on sample
 * messages and, for a while, on the live messages of one DataHub subject or UNS topic, one
 * evaluation at a time in arrival order, within the edge's playground limits, in the expression
 * sandbox (off the main loop, bounded in time, depth and output).
 */
import { badRequest } from '../../kernel/errors.js';
import type { TwinsApi } from './module.js';
import { checkSingleMqttTopic, checkSingleSubject } from './service.js';
import { compileTransformation, describeEvalError } from './transform.js';

export interface PlaygroundInput {
  expression: string;
  /** Sample messages, evaluated first. */
  messages: unknown[];
  /** A live source (a DataHub subject, or a UNS topic when `attributeType` is `UNS`), or null. */
  topic: string | null;
  attributeType: string | null;
  params: unknown;
}

export interface PlaygroundOutput {
  /** `sample`, or the live topic the message came from. */
  source: string;
  input: unknown;
  output: unknown;
  error: string | null;
}

export interface PlaygroundSink {
  push(out: PlaygroundOutput): void;
  /** No more outputs: the samples are done (no live topic), the message or time limit is reached. */
  end(): void;
}

/** A checked playground run, not started. */
export interface Playground {
  /** Starts evaluating into `sink`; answers the stop (unsubscribes, clears the timer). */
  run(sink: PlaygroundSink): () => void;
}

/** Checks `input` against the limits and the live source (throws before anything starts). */
export function preparePlayground(twins: TwinsApi, input: PlaygroundInput): Playground {
  const compiled = compileTransformation(input.expression);
  const params = input.params ?? {};
  const samples = input.messages;
  const limits = twins.playground;
  if (samples.length > limits.maxSamples)
    throw badRequest(`Messages holds more than ${limits.maxSamples} samples`);
  const live = input.topic;
  const uns = input.attributeType === 'UNS';
  if (live !== null) {
    if (uns) checkSingleMqttTopic(live, 'Topic');
    else checkSingleSubject(live, 'Topic');
    if (uns && !twins.uns) throw badRequest('no UNS broker configured (--uns-mqtt-url)');
  }
  return {
    run(sink) {
      const offs: (() => void)[] = [];
      let timer: NodeJS.Timeout | undefined;
      let count = 0;
      // One evaluation at a time, in arrival order.
      let chain = Promise.resolve();
      const evaluate = (source: string, message: unknown) => {
        chain = chain.then(async () => {
          let out: PlaygroundOutput;
          try {
            out = {
              source,
              input: message,
              output: await twins.expressions.evaluate(compiled.expression, message, params),
              error: null,
            };
          } catch (err) {
            out = { source, input: message, output: null, error: describeEvalError(err) };
          }
          sink.push(out);
          if (++count >= limits.maxMessages) sink.end();
        });
        return chain;
      };
      for (const m of samples) void evaluate('sample', m);
      if (live === null) {
        void chain.then(() => sink.end());
      } else {
        timer = setTimeout(() => sink.end(), limits.maxDurationMs);
        timer.unref();
        if (uns) offs.push(twins.uns!.subscribe(live, (p) => void evaluate(live, p)));
        else {
          const sub = twins.hub.subscribe(live, { callback: (msg) => void evaluate(live, msg.json()) });
          offs.push(() => sub.unsubscribe());
        }
      }
      return () => {
        for (const off of offs) off();
        if (timer) clearTimeout(timer);
      };
    },
  };
}
