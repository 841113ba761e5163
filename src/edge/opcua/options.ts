/** The OPC UA server's settings. */
import { Type } from '@sinclair/typebox';
import { Option } from '../../kernel/service/options.js';

export const opcuaOptions = Type.Object({
  opcuaEnabled: Option.bool({
    default: true,
    description: 'run the OPC UA server (the DeviceHub tags as an address space; its start takes seconds)',
  }),
  opcuaPort: Option.port({ default: 4840, description: 'port of the OPC UA server (opc.tcp)' }),
  opcuaHost: Option.string({ default: '0.0.0.0', description: 'address the OPC UA server listens on' }),
});
