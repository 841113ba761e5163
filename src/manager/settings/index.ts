/** Instance settings of the manager: licence type, instance mode, MQTT and HTTPS certificates, marketplace secrets. */
export { settingsModule } from './module.js';
export {
  InstanceSettingsService,
  LICENSE,
  MPC_SECRETS_MAX,
  MPC_SECRET_MAX_BYTES,
  checkPair,
} from './service.js';
