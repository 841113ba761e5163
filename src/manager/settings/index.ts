/** Instance settings of the manager: licence type, instance mode, MQTT and HTTPS certificates (marketplace secrets: the marketplace module). */
export { settingsModule } from './module.js';
export { InstanceSettingsService, LICENSE, checkPair } from './service.js';
