/** The machine's network: interfaces and static routes (the HA role is dm's: `/dm/v2/ha/role`). */
export { networkModule } from './module.js';
export { NetworkService, routeId, type NetworkInterfaceInfo, type Route } from './service.js';
