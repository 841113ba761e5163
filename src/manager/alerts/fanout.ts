/**
 * What one incident change sends, and to whom: the notifications (outbox rows) written in the
 * change's transaction. Destinations are the instance's and the incident's project's (each when
 * enabled and the incident's severity reaches its `minSeverity`), narrowed by the project's
 * notification settings of the rule (`notify`, `channels`). Each e-mail destination set is one
 * message to all its recipients; each webhook and each MQTT topic one message.
 */
import { uuidv7 } from '../../kernel/ids.js';
import { ruleOf, severityRank, type Severity } from './catalog.js';
import type { AlertRepository, IncidentRow, NotificationRow } from './repository.js';
import { parseDestinations, parseInstance, type Channel, type Destinations } from './settings.js';

export type IncidentEvent = 'OPENED' | 'RESOLVED' | 'DELETED';

/** An incident as the API answers it and as notifications carry it. */
export function incidentView(row: IncidentRow) {
  return {
    id: row.id,
    ruleKey: row.rule_key,
    ruleName: ruleOf(row.rule_key)?.name ?? row.rule_key,
    deviceId: row.device_id,
    deviceName: row.device_name,
    projectId: row.project_id,
    companyId: row.company_id,
    severity: row.severity,
    status: row.status,
    summary: row.summary,
    details: JSON.parse(row.details) as Record<string, unknown>,
    openedAt: new Date(Number(row.opened_at)).toISOString(),
    resolvedAt: row.resolved_at === null ? null : new Date(Number(row.resolved_at)).toISOString(),
    resolvedBy: row.resolved_by,
  };
}

/** The webhook body, the MQTT payload, and the e-mail's subject and text. */
function notice(row: IncidentRow, event: IncidentEvent, deliveryId: string, at: number) {
  const incident = incidentView(row);
  const verb = event === 'OPENED' ? 'opened' : event === 'RESOLVED' ? 'resolved' : 'deleted';
  const subject = `[${row.severity}] ${incident.ruleName} ${verb}: ${row.device_name}`;
  const text = [
    `Incident ${verb}: ${row.summary}`,
    '',
    `rule:      ${incident.ruleName} (${row.rule_key})`,
    `severity:  ${row.severity}`,
    `device:    ${row.device_name} (${row.device_id})`,
    `project:   ${row.project_id}`,
    `opened:    ${incident.openedAt}`,
    ...(incident.resolvedAt ? [`resolved:  ${incident.resolvedAt} by ${row.resolved_by ?? ''}`] : []),
    `incident:  ${row.id}`,
  ].join('\n');
  return {
    subject,
    text,
    body: {
      event: `incident.${verb}`,
      deliveryId,
      at: new Date(at).toISOString(),
      incident,
    },
  };
}

/** The notifications of one incident change, to insert in the change's transaction. */
export async function notificationsFor(
  repo: AlertRepository,
  row: IncidentRow,
  event: IncidentEvent,
): Promise<NotificationRow[]> {
  const now = Date.now();
  const instance = parseInstance((await repo.setting('instance'))?.value);
  const project = parseDestinations((await repo.setting(`project:${row.project_id}`))?.value);
  const perRule = await repo.ruleProject(row.rule_key, row.project_id);
  if (perRule && perRule.notify === 0) return [];
  const allowed = new Set<Channel>(
    perRule ? (JSON.parse(perRule.channels) as Channel[]) : ['email', 'webhook', 'mqtt'],
  );
  const prefix = instance.mqtt?.topicPrefix ?? 'millwright/incidents';
  const out: NotificationRow[] = [];
  const add = (channel: Channel, channelKey: string, target: Record<string, unknown>) => {
    const id = uuidv7(now);
    out.push({
      id,
      incident_id: row.id,
      event,
      channel,
      channel_key: channelKey.slice(0, 1000),
      target: JSON.stringify(target),
      payload: JSON.stringify(notice(row, event, id, now)),
      status: 'PENDING',
      attempts: 0,
      next_attempt_at: now,
      claimed_by: null,
      lease_until: null,
      last_error: null,
      created_at: now,
      sent_at: null,
    });
  };
  const sets: [string, Destinations][] = [
    ['instance', instance.notify],
    [`project:${row.project_id}`, project],
  ];
  for (const [scope, d] of sets) {
    if (!d.enabled || severityRank(row.severity as Severity) < severityRank(d.minSeverity)) continue;
    if (allowed.has('email') && d.emails.length > 0) add('email', `email:${scope}`, { to: d.emails });
    if (allowed.has('webhook'))
      for (const w of d.webhooks)
        add('webhook', `webhook:${scope}:${w.url}`, { url: w.url, secret: w.secret });
    if (allowed.has('mqtt') && d.mqtt) {
      const topic = d.mqttTopic ?? `${prefix}/${row.project_id}/${row.device_id}/${row.rule_key}`;
      add('mqtt', `mqtt:${scope}:${topic}`, { topic });
    }
  }
  return out;
}
