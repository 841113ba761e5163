/**
 * SNMP (src/edge/acquisition/drivers/snmp.ts): v1 and v2c with a community, v3 with a user,
 * authentication and privacy. Registers: one object (`OID`), a subtree (`Walk`), a table
 * (`Table`) and notifications received (`Trap`).
 */
import { driver, network, prop, register, timing, type DriverDef } from './types.js';

const SCALAR_TYPES = ['int32', 'uint32', 'int64', 'uint64', 'float64', 'string', 'bool'];
const oid = (description: string, required = true) =>
  prop.string('oid', description, required ? { required: true } : { default: '' });

export const snmpDrivers: DriverDef[] = [
  driver({
    key: 'snmp',
    name: 'SNMP',
    protocol: 'SNMP',
    description:
      'SNMP agents (v1, v2c, v3 with authentication and privacy): get, get-bulk, walk, tables, traps',
    pollable: true,
    browsable: true,
    properties: [
      ...network(161),
      prop.select(
        'String',
        'version',
        'SNMP version',
        [
          ['v1', 'v1'],
          ['v2c', 'v2c'],
          ['v3', 'v3'],
        ],
        { default: 'v2c' },
      ),
      prop.password('community', 'community (v1, v2c)', { default: 'public' }),
      prop.string('securityName', 'user name (v3)', { default: '' }),
      prop.select(
        'String',
        'securityLevel',
        'security level (v3)',
        [
          ['noAuthNoPriv', 'no authentication, no privacy'],
          ['authNoPriv', 'authentication, no privacy'],
          ['authPriv', 'authentication and privacy'],
        ],
        { default: 'authPriv' },
      ),
      prop.select(
        'String',
        'authProtocol',
        'authentication protocol (v3)',
        ['MD5', 'SHA', 'SHA224', 'SHA256', 'SHA384', 'SHA512'].map((p) => [p, p]),
        { default: 'SHA' },
      ),
      prop.password('authKey', 'authentication pass phrase (v3), at least 8 characters', { default: '' }),
      prop.select(
        'String',
        'privProtocol',
        'privacy protocol (v3)',
        [
          ['DES', 'DES'],
          ['AES', 'AES-128'],
          ['AES256B', 'AES-256 (Blumenthal)'],
          ['AES256R', 'AES-256 (Reeder)'],
        ],
        { default: 'AES' },
      ),
      prop.password('privKey', 'privacy pass phrase (v3), at least 8 characters', { default: '' }),
      prop.string('contextName', 'context (v3)', { default: '' }),
      prop.uint('maxOidsPerRequest', 'OID tags asked in one GET', { min: 1, max: 200, default: 50 }),
      prop.uint('maxConcurrentRequests', 'GET requests in flight to the agent at once (1: one at a time)', {
        min: 1,
        max: 16,
        default: 4,
      }),
      prop.uint('maxRepetitions', 'rows per GETBULK of a walk or table (v2c, v3)', {
        min: 1,
        max: 200,
        default: 20,
      }),
      prop.uint('trapPort', "UDP port on which the edge receives this device's traps (0: none)", {
        min: 0,
        max: 65535,
        default: 0,
      }),
      prop.string('browseRoot', 'OID whose subtree a browse lists', { default: '1.3.6.1.2.1' }),
      ...timing({ retries: 1 }),
    ],
    registers: [
      register('OID', 'one object instance, read with GET (e.g. 1.3.6.1.2.1.1.3.0)', null, SCALAR_TYPES, [
        oid('object instance OID'),
        prop.select(
          'String',
          'setType',
          'SNMP type of a write (empty: from the value type)',
          [
            ['', 'from the value type'],
            ...[
              'Integer',
              'OctetString',
              'Gauge32',
              'Counter32',
              'TimeTicks',
              'IpAddress',
              'ObjectIdentifier',
            ].map((t): [string, string] => [t, t]),
          ],
          { default: '' },
        ),
      ]),
      register(
        'Walk',
        'a subtree as one JSON object (OID suffix → value)',
        null,
        ['json'],
        [oid('subtree root')],
      ),
      register(
        'Table',
        'a table as rows keyed by index (column → value)',
        null,
        ['json'],
        [oid('table OID')],
      ),
      register(
        'Trap',
        "notifications received on the device's trapPort",
        null,
        ['json', ...SCALAR_TYPES],
        [
          prop.string('trapOid', 'snmpTrapOID to match (empty: every notification)', { default: '' }),
          oid('varbind whose value is the tag value (empty: the whole notification as JSON)', false),
        ],
      ),
    ],
  }),
];
