/** The machine's network: interfaces, static routes and the high availability role. */
export { networkModule } from './module.js';
export {
  NetworkService,
  haRole,
  routeId,
  type HaRole,
  type NetworkInterfaceInfo,
  type Route,
} from './service.js';
