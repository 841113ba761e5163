/**
 * Building automation: BACnet/IP. A device is one BACnet device (its IP address and UDP port, its
 * device instance, found by Who-Is when not given); a tag is one property (Present_Value unless
 * named) of one object, the register being the object type.
 */
import { driver, prop, register, timing, type DriverDef } from './types.js';

const INSTANCE: [number, number] = [0, 4194302];
const ANALOG = ['float32', 'float64', 'int32', 'uint32', 'string'];
const BINARY = ['bool', 'uint32', 'string'];
const MULTISTATE = ['uint32', 'int32', 'string'];

const property = () =>
  prop.uint('property', 'BACnet property identifier (85 Present_Value, 77 Object_Name, 117 Units...)', {
    min: 0,
    max: 4194303,
    default: 85,
  });
const priority = () =>
  prop.uint('priority', 'write priority, 1 (highest) to 16 (lowest)', { min: 1, max: 16, default: 16 });

/** The object types a tag can name, with their BACnet object type numbers (ASHRAE 135). */
export const BACNET_OBJECT_TYPES: Array<[string, number, string, string[]]> = [
  ['AI', 0, 'analog input', ANALOG],
  ['AO', 1, 'analog output', ANALOG],
  ['AV', 2, 'analog value', ANALOG],
  ['BI', 3, 'binary input', BINARY],
  ['BO', 4, 'binary output', BINARY],
  ['BV', 5, 'binary value', BINARY],
  ['MSI', 13, 'multi-state input', MULTISTATE],
  ['MSO', 14, 'multi-state output', MULTISTATE],
  ['MSV', 19, 'multi-state value', MULTISTATE],
];

export const bacnetDrivers: DriverDef[] = [
  driver({
    key: 'bacnet-ip',
    name: 'BACnet/IP',
    protocol: 'BACnet',
    description: 'BACnet/IP devices: read property (multiple), write property with priority, COV',
    pollable: true,
    browsable: true,
    properties: [
      prop.string('host', 'IP address of the device (or a broadcast address to discover it)', {
        required: true,
      }),
      prop.uint('port', 'UDP port of the device', { min: 1, max: 65535, default: 47808 }),
      prop.int('deviceInstance', 'device object instance (-1: the first device that answers Who-Is)', {
        min: -1,
        max: 4194302,
        default: -1,
      }),
      prop.uint('localPort', 'UDP port the edge listens on (broadcast I-Am answers come to 47808)', {
        min: 1,
        max: 65535,
        default: 47808,
      }),
      prop.bool('useCov', 'subscribe to changes (SubscribeCOV) when the device offers it', {
        default: true,
      }),
      prop.uint('covLifetime', 'seconds a COV subscription lasts before it is renewed', {
        min: 10,
        max: 86400,
        default: 300,
      }),
      prop.uint(
        'maxPropertiesPerRequest',
        "properties read in one ReadPropertyMultiple at most (0: as many as the device's maximum APDU holds)",
        { min: 0, max: 1000, default: 0 },
      ),
      prop.uint(
        'maxConcurrentRequests',
        'read requests in flight to the device at once (1: one at a time, for devices that take one)',
        { min: 1, max: 16, default: 4 },
      ),
      ...timing({ requestTimeoutMs: 3000 }),
    ],
    registers: BACNET_OBJECT_TYPES.map(([name, , description, types]) =>
      register(name, description, INSTANCE, types, [property(), priority()]),
    ),
  }),
];
