/**
 * `millwright edge device list|create|delete` and `millwright edge tag list|create|delete`: the
 * DeviceHub of a running edge through the typed client (GraphQL at /devicehub/v2), as tables or
 * as JSON (`--json`).
 */
import { Command, Option } from 'commander';
import type { EdgeClient } from '../client/edge.js';
import { ConfigError } from '../kernel/config.js';
import { addEdgeClientOptions, edgeClientFrom, type EdgeClientFlags } from './edge-client.js';

const PATH = '/devicehub/v2';
const DEVICE_FIELDS = 'ID Name DriverName Description AliasTopics Properties { Key Value }';
const TAG_FIELDS =
  'ID DeviceID DeviceName Name TagName ValueType IntervalMs PublishCoV Properties { Name Value } Topics { Topic Direction }';

/** `--property key=value` (repeatable). */
/** What the tables below read of a device and a tag (the JSON output prints all of it). */
interface DeviceOut {
  ID: string;
  Name: string;
  DriverName: string;
}
interface TagOut {
  ID: string;
  TagName: string;
  Name: string;
  ValueType: string;
  Topics: Array<{ Direction: string; Topic: string }>;
}
interface TagStatusOut {
  ID: string;
  State: string;
  Value: unknown;
}

function collect(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}
function pairs(values: string[] | undefined): Array<[string, string]> {
  return (values ?? []).map((v) => {
    const i = v.indexOf('=');
    if (i <= 0) throw new ConfigError(`--property takes NAME=VALUE (e.g. --property address=0), got "${v}"`);
    return [v.slice(0, i), v.slice(i + 1)];
  });
}

async function run<T>(
  cmd: Command,
  fn: (client: EdgeClient) => Promise<T>,
  table: (out: T) => string,
): Promise<void> {
  const o = cmd.opts<EdgeClientFlags & { json?: boolean }>();
  const client = edgeClientFrom(o);
  try {
    const out = await fn(client);
    process.stdout.write(o.json ? `${JSON.stringify(out, null, 2)}\n` : `${table(out)}\n`);
  } finally {
    client.close();
  }
}

function columns(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows
    .map((r) =>
      r
        .map((c, i) => c.padEnd(widths[i]!))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

function command(parent: Command, name: string, description: string): Command {
  return addEdgeClientOptions(parent.command(name).description(description)).option('--json', 'print JSON');
}

export function edgeDeviceCommands(edge: Command): void {
  deviceCommands(edge);
  tagCommands(edge);
  driverCommands(edge);
}

interface DriverOut {
  ID: string;
  Name: string;
  Protocol: string;
  Acquiring: boolean;
}

/** `edge driver list`: the catalogue, and which of its drivers this build acquires. */
function driverCommands(edge: Command): void {
  const drivers = edge.command('driver').description('the driver catalogue of a running edge');
  const list = command(
    drivers,
    'list',
    'list the drivers; ACQUIRES says whether this build polls their devices',
  )
    .option('--acquiring', 'only the drivers this build acquires')
    .action(() =>
      run(
        list,
        async (c) => {
          const items = (
            await c.graphql<{ ListDrivers: { Items: DriverOut[] } }>(
              PATH,
              'query { ListDrivers(input: { Limit: 1000 }) { Items { ID Name Protocol Acquiring } } }',
            )
          ).ListDrivers.Items;
          return list.opts<{ acquiring?: boolean }>().acquiring ? items.filter((d) => d.Acquiring) : items;
        },
        (items) =>
          columns([
            ['NAME', 'PROTOCOL', 'ACQUIRES'],
            ...items.map((d) => [d.Name, d.Protocol, d.Acquiring ? 'yes' : 'no (configuration only)']),
          ]),
      ),
    );
}

/** `edge device list|create|delete`. */
function deviceCommands(edge: Command): void {
  const devices = edge
    .command('device')
    .description('devices of a running edge (--url, --client-id, --client-secret; see docs/cli.md)');
  const dlist = command(devices, 'list', 'list the devices').action(() =>
    run(
      dlist,
      async (c) =>
        (
          await c.graphql<{ ListDevices: { Items: DeviceOut[] } }>(
            PATH,
            `query { ListDevices(input: { Limit: 1000 }) { Items { ${DEVICE_FIELDS} } } }`,
          )
        ).ListDevices.Items,
      (items) => columns([['ID', 'NAME', 'DRIVER'], ...items.map((d) => [d.ID, d.Name, d.DriverName])]),
    ),
  );
  const dcreate = command(devices, 'create', 'create a device; prints it')
    .requiredOption('--name <name>', 'the device name (used in subjects: devicehub.raw.<name>.<tag>)')
    .requiredOption('--driver <driver>', 'a driver ID or name, e.g. Generator, "Modbus TCP"')
    .option('--property <key=value>', 'a device property (repeatable); others take the defaults', collect)
    .option('--description <text>', 'a description')
    .option('--alias-topics', 'also publish on devicehub.alias.<name>.<tag>')
    .action(() =>
      run(
        dcreate,
        async (c) => {
          const o = dcreate.opts<{
            name: string;
            driver: string;
            property?: string[];
            description?: string;
            aliasTopics?: boolean;
          }>();
          const input = {
            Name: o.name,
            DriverID: o.driver,
            // Device properties are { Key Value } on the wire (tag properties are { Name Value }).
            Properties: pairs(o.property).map(([Key, Value]) => ({ Key, Value })),
            ...(o.description ? { Description: o.description } : {}),
            ...(o.aliasTopics ? { AliasTopics: true } : {}),
          };
          return (
            await c.graphql<{ CreateDevice: DeviceOut }>(
              PATH,
              `mutation($in: CreateDeviceRequest!) { CreateDevice(input: $in) { ${DEVICE_FIELDS} } }`,
              { in: input },
            )
          ).CreateDevice;
        },
        (d) =>
          columns([
            ['ID', 'NAME', 'DRIVER'],
            [d.ID, d.Name, d.DriverName],
          ]),
      ),
    );
  const ddelete = command(devices, 'delete', 'delete a device and its tags')
    .requiredOption('--device <id-or-name>', 'the device')
    .action(() =>
      run(
        ddelete,
        async (c) => {
          const id = await deviceId(c, ddelete.opts<{ device: string }>().device);
          const n = (
            await c.graphql(PATH, `mutation($ids: [ID!]!) { DeleteDevices(IDs: $ids) }`, { ids: [id] })
          ).DeleteDevices as number;
          return { deleted: n };
        },
        (r: { deleted: number }) => `deleted ${r.deleted} device(s)`,
      ),
    );
}

/** `edge tag list|create|delete`. */
function tagCommands(edge: Command): void {
  const tags = edge.command('tag').description('tags of the devices of a running edge');
  const tlist = command(tags, 'list', 'list the tags of a device, with their state and last value')
    .requiredOption('--device <id-or-name>', 'the device')
    .action(() =>
      run(
        tlist,
        async (c) => {
          const items = (
            await c.graphql<{ ListRegisters: { Registers: TagOut[] } }>(
              PATH,
              `query($d: ID!) { ListRegisters(input: { DeviceID: $d, Limit: 1000 }) { Registers { ${TAG_FIELDS} } } }`,
              { d: tlist.opts<{ device: string }>().device },
            )
          ).ListRegisters.Registers;
          if (items.length === 0) return [] as Array<TagOut & { Status?: TagStatusOut }>;
          const status = (
            await c.graphql<{ GetTagStatus: TagStatusOut[] }>(
              PATH,
              `query($ids: [ID!]!) { GetTagStatus(IDs: $ids) { ID State Reason Value Timestamp } }`,
              { ids: items.map((t) => t.ID) },
            )
          ).GetTagStatus;
          const byId = new Map(status.map((s) => [s.ID, s]));
          return items.map((t) => ({ ...t, Status: byId.get(t.ID) }));
        },
        (items) =>
          columns([
            ['ID', 'TAG', 'REGISTER', 'TYPE', 'STATE', 'VALUE'],
            ...items.map((t) => [
              t.ID,
              t.TagName,
              t.Name,
              t.ValueType,
              t.Status?.State ?? '',
              t.Status?.Value === null || t.Status?.Value === undefined ? '' : JSON.stringify(t.Status.Value),
            ]),
          ]),
      ),
    );
  tagCreateCommand(tags);

  const tdelete = command(tags, 'delete', 'delete a tag')
    .requiredOption('--id <id>', 'the tag ID')
    .action(() =>
      run(
        tdelete,
        async (c) => ({
          deleted: (
            await c.graphql(PATH, `mutation($ids: [ID!]!) { DeleteRegisters(IDs: $ids) }`, {
              ids: [tdelete.opts<{ id: string }>().id],
            })
          ).DeleteRegisters as number,
        }),
        (r: { deleted: number }) => `deleted ${r.deleted} tag(s)`,
      ),
    );
}

/** `edge tag create`. */
function tagCreateCommand(tags: Command): void {
  const tcreate = command(tags, 'create', 'create a tag; prints it')
    .requiredOption('--device <id-or-name>', 'the device')
    .requiredOption(
      '--register <register>',
      "the driver's register (area), e.g. S (Generator sine), HR (Modbus)",
    )
    .requiredOption('--name <tag>', 'the tag name (used in subjects: devicehub.raw.<device>.<tag>)')
    .requiredOption('--type <valueType>', 'value type, e.g. float64, int16, bool')
    .addOption(
      new Option('--interval <ms>', 'poll interval, milliseconds').argParser((v) => Number.parseInt(v, 10)),
    )
    .option('--property <name=value>', 'a tag property (repeatable), e.g. address=0', collect)
    .option('--cov', 'publish only when the value changes')
    .action(() =>
      run(
        tcreate,
        async (c) => {
          const o = tcreate.opts<{
            device: string;
            register: string;
            name: string;
            type: string;
            interval?: number;
            property?: string[];
            cov?: boolean;
          }>();
          const input = {
            DeviceID: o.device,
            Name: o.register,
            TagName: o.name,
            ValueType: o.type,
            ...(o.interval ? { IntervalMs: o.interval } : {}),
            ...(o.cov ? { PublishCoV: true } : {}),
            Properties: pairs(o.property).map(([Name, Value]) => ({ Name, Value })),
          };
          return (
            await c.graphql<{ CreateRegister: TagOut }>(
              PATH,
              `mutation($in: CreateRegisterRequest!) { CreateRegister(input: $in) { ${TAG_FIELDS} } }`,
              { in: input },
            )
          ).CreateRegister;
        },
        (t) =>
          columns([
            ['ID', 'TAG', 'REGISTER', 'TYPE', 'SUBJECT'],
            [
              t.ID,
              t.TagName,
              t.Name,
              t.ValueType,
              t.Topics.find((x) => x.Direction === 'Output')?.Topic ?? '',
            ],
          ]),
      ),
    );
}

/** A device ID from an ID or a name. */
async function deviceId(c: EdgeClient, idOrName: string): Promise<string> {
  const d = (await c.graphql(PATH, `query($id: ID!) { GetDevice(ID: $id) { ID } }`, { id: idOrName }))
    .GetDevice;
  if (d) return d.ID as string;
  const items = (await c.graphql(PATH, `query { ListDevices(input: { Limit: 1000 }) { Items { ID Name } } }`))
    .ListDevices.Items as Array<{ ID: string; Name: string }>;
  const byName = items.find((x) => x.Name === idOrName);
  if (!byName) throw new Error(`device "${idOrName}" not found`);
  return byName.ID;
}
