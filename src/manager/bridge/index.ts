/** The bridge to any edge API through its link: the service (also used by templates) and its routes. */
export { bridgeModule } from './module.js';
export {
  BridgeService,
  BRIDGE_MAX_BODY,
  managerActor,
  principalActor,
  type BridgedCallRecord,
  type EdgeAnswer,
  type EdgeCall,
} from './service.js';
