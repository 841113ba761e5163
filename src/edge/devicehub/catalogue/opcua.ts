/**
 * OPC UA clients. Pollable: `OPC UA Client` (browse, read, monitored items). Part 2.4: the
 * advanced client gains value type `Method` with the register property
 * `DefaultInputArgumentsOPCUAMethod` (a table whose rows are the method's arguments).
 */
import { column, driver, prop, register, type DriverDef, type PropertyDef } from './types.js';

const VALUE_TYPES = [
  'bool',
  'sint',
  'byte',
  'int16',
  'uint16',
  'int32',
  'uint32',
  'int64',
  'uint64',
  'float32',
  'float64',
  'string',
  'datetime',
];

const connection = (): PropertyDef[] => [
  prop.string('endpointUrl', 'server endpoint, e.g. opc.tcp://host:4840', { required: true }),
  prop.select(
    'String',
    'securityMode',
    'message security',
    [
      ['None', 'None'],
      ['Sign', 'Sign'],
      ['SignAndEncrypt', 'Sign & Encrypt'],
    ],
    { default: 'None' },
  ),
  prop.select(
    'String',
    'securityPolicy',
    'security policy',
    [
      ['None', 'None'],
      ['Basic256Sha256', 'Basic256Sha256'],
      ['Aes128_Sha256_RsaOaep', 'Aes128_Sha256_RsaOaep'],
      ['Aes256_Sha256_RsaPss', 'Aes256_Sha256_RsaPss'],
    ],
    { default: 'None' },
  ),
  prop.select(
    'String',
    'trustServerCertificate',
    "which server certificates are trusted (Sign, SignAndEncrypt): auto, any on first use; ca, only one signed by a CA of the edge's trust store",
    [
      ['auto', 'On first use'],
      ['ca', 'Trust store CAs only'],
    ],
    { default: 'auto' },
  ),
  prop.string('username', 'user name (empty for anonymous)', { default: '' }),
  prop.password('password', 'password of the user', { default: '' }),
  prop.uint('requestTimeoutMs', 'time to wait for a service answer, in milliseconds', {
    min: 100,
    max: 600000,
    default: 5000,
  }),
  prop.bool('useSubscriptions', 'use monitored items instead of polling where the server supports it', {
    default: true,
  }),
];

const nodeProps = (): PropertyDef[] => [
  prop.string('nodeId', 'node identifier, e.g. ns=2;s=Pump.Speed', { required: true }),
];

export const opcuaDrivers: DriverDef[] = [
  driver({
    key: 'opcua-client',
    name: 'OPC UA Client',
    protocol: 'OPC UA',
    description: 'reads, writes and browses an OPC UA server',
    pollable: true,
    browsable: true,
    properties: connection(),
    registers: [register('Node', 'a variable node', null, VALUE_TYPES, nodeProps())],
  }),
  driver({
    key: 'opcua-client-advanced',
    name: 'OPC UA Client (Advanced)',
    protocol: 'OPC UA',
    description: 'OPC UA client with method calls, arrays and per-tag sampling settings',
    pollable: false,
    properties: [
      ...connection(),
      prop.uint('publishingIntervalMs', 'publishing interval of the subscription', {
        min: 10,
        max: 3600000,
        default: 1000,
      }),
    ],
    registers: [
      register(
        'Node',
        'a variable node',
        null,
        [...VALUE_TYPES, 'Method'],
        [
          ...nodeProps(),
          prop.uint('samplingIntervalMs', 'sampling interval of the monitored item', {
            min: 0,
            max: 3600000,
            default: 0,
          }),
          prop.string('methodObjectId', 'for value type Method: node of the object that owns the method', {
            default: '',
          }),
          prop.rowFixedTable(
            'DefaultInputArgumentsOPCUAMethod',
            'for value type Method: the input arguments sent with a call that gives none',
            [
              column('Name', 'String', { readOnly: true }),
              column('DataType', 'String', { readOnly: true }),
              column('Value', 'String', { allowEmpty: true }),
            ],
            [{ Name: 'arg0', DataType: 'string', Value: '' }],
          ),
        ],
      ),
    ],
  }),
];
