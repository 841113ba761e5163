/**
 * DataHub subjects of a tag, derived from the device and tag names (both restricted to letters,
 * digits, `_`, `-` and `:`, so each is one subject token).
 */
export type TopicFormat = 'Raw' | 'Value' | 'WriteResponse' | 'Command' | 'Call' | 'CallResponse';

export interface Topic {
  Format: TopicFormat;
  Topic: string;
  Direction: 'Output' | 'Input';
  IntervalMs: number | null;
  Description: string;
}

export function topicsOf(
  deviceName: string,
  tagName: string,
  opts: { aliasTopics: boolean; valueType: string; intervalMs: number },
): Topic[] {
  const path = `${deviceName}.${tagName}`;
  const topics: Topic[] = [
    {
      Format: 'Raw',
      Topic: `devicehub.raw.${path}`,
      Direction: 'Output',
      IntervalMs: opts.intervalMs,
      Description: 'every read as the JSON payload (success, datatype, timestamp, value, ...)',
    },
  ];
  if (opts.aliasTopics) {
    topics.push({
      Format: 'Raw',
      Topic: `devicehub.alias.${path}`,
      Direction: 'Output',
      IntervalMs: opts.intervalMs,
      Description: 'alias of the raw topic (the device has AliasTopics)',
    });
  }
  topics.push(
    {
      Format: 'Value',
      Topic: `devicehub.value.${path}`,
      Direction: 'Output',
      IntervalMs: opts.intervalMs,
      Description: 'the value alone, as JSON',
    },
    {
      Format: 'Command',
      Topic: `devicehub.command.${path}`,
      Direction: 'Input',
      IntervalMs: null,
      Description: 'publish a value here to write it to the device',
    },
    {
      Format: 'WriteResponse',
      Topic: `devicehub.writeresponse.${path}`,
      Direction: 'Output',
      IntervalMs: null,
      Description: 'outcome of each write: success or the device error',
    },
  );
  if (opts.valueType === 'Method') {
    topics.push(
      {
        Format: 'Call',
        Topic: `devicehub.call.${path}`,
        Direction: 'Input',
        IntervalMs: null,
        Description: 'publish input arguments here to call the method',
      },
      {
        Format: 'CallResponse',
        Topic: `devicehub.callresponse.${path}`,
        Direction: 'Output',
        IntervalMs: null,
        Description: 'outcome and output arguments of each call',
      },
    );
  }
  return topics;
}
