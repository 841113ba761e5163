/**
 * net-snmp, loaded at its first use (an SNMP device's session, a trap receiver, a browse), not
 * with the edge's modules: its import builds its MIB tables, about 45 ms of CPU in every process
 * that loads the edge (each start, each CLI service command) for an edge that has no SNMP device.
 */
import { createRequire } from 'node:module';
import type * as NetSnmpModule from 'net-snmp';

type NetSnmp = typeof NetSnmpModule;
let lib: NetSnmp | undefined;

/** The net-snmp module (loaded on the first call). */
export function netSnmp(): NetSnmp {
  lib ??= createRequire(import.meta.url)('net-snmp') as NetSnmp;
  return lib;
}
