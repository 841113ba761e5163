/** Platform rules, alert triggers, incidents and their notifications (e-mail, webhook, MQTT). */
export { alertsModule, type Alerts } from './module.js';
export { AlertService, MAX_TRIGGERS, MAX_INCIDENTS_PER_CALL, SCOPE_TYPES } from './service.js';
export { RULES, SEVERITIES, type Severity } from './catalog.js';
export { webhookSignature } from './channels.js';
