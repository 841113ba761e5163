/**
 * The three ways a notification leaves the manager: an e-mail over SMTP (nodemailer), a webhook
 * (an HTTP POST signed with HMAC-SHA256) and a message on an MQTT broker. Each send is bounded in
 * time; each carries the notification's id (`X-Millwright-Delivery`, the e-mail's Message-ID, the
 * MQTT payload's `deliveryId`), so a receiver can recognise the rare repeat after a crash between
 * a peer's acceptance and the commit of SENT.
 *
 * nodemailer and mqtt are loaded on the first send, not with the manager (their modules cost the
 * manager's memory whether or not any incident setting names a channel).
 */
import { createHmac, randomUUID } from 'node:crypto';
import type { MqttClient } from 'mqtt';
import type { SecretBox } from '../../kernel/secret-box.js';
import type { MqttSettings, SmtpSettings } from './settings.js';

/** The longest one attempt to send may take. */
export const SEND_TIMEOUT_MS = 10_000;

/** A failure that another attempt will not fix (a 4xx answer of a webhook, say). */
export class PermanentFailure extends Error {}

export interface Notice {
  id: string;
  event: string;
  subject: string;
  text: string;
  /** The JSON body of the webhook and the MQTT message. */
  body: Record<string, unknown>;
}

export function webhookSignature(secret: string, timestamp: string, body: string): string {
  return `sha256=${createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex')}`;
}

export async function sendWebhook(url: string, secret: string | null, notice: Notice): Promise<void> {
  const body = JSON.stringify(notice.body);
  const timestamp = String(Math.floor(Date.now() / 1000));
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'user-agent': 'millwright-manager',
    'x-millwright-event': notice.event,
    'x-millwright-delivery': notice.id,
    'x-millwright-timestamp': timestamp,
  };
  if (secret !== null) headers['x-millwright-signature'] = webhookSignature(secret, timestamp, body);
  const res = await fetch(url, {
    method: 'POST',
    headers,
    body,
    redirect: 'manual',
    signal: AbortSignal.timeout(SEND_TIMEOUT_MS),
  });
  await res.body?.cancel().catch(() => undefined);
  if (res.status >= 200 && res.status < 300) return;
  const message = `the webhook answered HTTP ${res.status}`;
  if (res.status >= 400 && res.status < 500 && res.status !== 408 && res.status !== 429)
    throw new PermanentFailure(message);
  throw new Error(message);
}

export async function sendEmail(
  smtp: SmtpSettings,
  box: SecretBox,
  to: string[],
  notice: Notice,
): Promise<void> {
  const nodemailer = (await import('nodemailer')).default;
  const transport = nodemailer.createTransport({
    host: smtp.host,
    port: smtp.port,
    secure: smtp.security === 'tls',
    requireTLS: smtp.security === 'starttls',
    ignoreTLS: smtp.security === 'none',
    ...(smtp.username
      ? { auth: { user: smtp.username, pass: smtp.password ? box.open(smtp.password) : '' } }
      : {}),
    tls: { rejectUnauthorized: smtp.rejectUnauthorized },
    connectionTimeout: SEND_TIMEOUT_MS,
    greetingTimeout: SEND_TIMEOUT_MS,
    socketTimeout: SEND_TIMEOUT_MS,
  });
  try {
    await transport.sendMail({
      from: smtp.from,
      to,
      subject: notice.subject,
      text: notice.text,
      messageId: `<${notice.id}@millwright.manager>`,
      headers: { 'X-Millwright-Delivery': notice.id, 'X-Millwright-Event': notice.event },
    });
  } finally {
    transport.close();
  }
}

/**
 * One MQTT connection per broker setting, opened on first use and kept; a failed publish drops
 * it (the next attempt connects again).
 */
export class MqttPublisher {
  #conn: Promise<MqttClient> | null = null;
  #key = '';

  async #client(settings: MqttSettings, box: SecretBox): Promise<MqttClient> {
    const key = JSON.stringify(settings);
    const current = this.#conn;
    if (current && this.#key === key) {
      const c = await current.catch(() => null);
      if (c?.connected) return c;
      if (this.#conn !== current) return this.#client(settings, box);
    }
    this.close();
    this.#key = key;
    const conn = import('mqtt')
      .then(({ default: mqtt }) =>
        mqtt.connectAsync(settings.url, {
          clientId: `millwright-manager-${randomUUID().slice(0, 12)}`,
          ...(settings.username ? { username: settings.username } : {}),
          ...(settings.password ? { password: box.open(settings.password) } : {}),
          rejectUnauthorized: settings.rejectUnauthorized,
          connectTimeout: SEND_TIMEOUT_MS,
          reconnectPeriod: 0,
        }),
      )
      .then((c) => {
        c.on('error', () => undefined);
        return c;
      });
    this.#conn = conn;
    conn.catch(() => {
      if (this.#conn === conn) this.#conn = null;
    });
    return conn;
  }

  async publish(settings: MqttSettings, box: SecretBox, topic: string, notice: Notice): Promise<void> {
    const client = await this.#client(settings, box);
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        client.publishAsync(topic, JSON.stringify(notice.body), { qos: settings.qos }),
        new Promise((_, reject) => {
          timer = setTimeout(
            () => reject(new Error('the MQTT broker did not acknowledge in time')),
            SEND_TIMEOUT_MS,
          );
        }),
      ]);
    } catch (err) {
      this.close();
      throw err;
    } finally {
      clearTimeout(timer);
    }
  }

  close(): void {
    const conn = this.#conn;
    this.#conn = null;
    void conn?.then((c) => c.end(true)).catch(() => undefined);
  }
}
