/**
 * Fixed texts of the NATS client protocol. Error texts are the ones nats-server sends
 * (`-ERR '<text>'`), since the official clients recognise some of them by their words.
 */
export const ERR = {
  unknownOp: 'Unknown Protocol Operation',
  authViolation: 'Authorization Violation',
  authTimeout: 'Authentication Timeout',
  maxPayload: 'Maximum Payload Violation',
  maxControlLine: 'maximum control line exceeded',
  slowConsumer: 'Slow Consumer',
  staleConnection: 'Stale Connection',
  tlsRequired: 'Secure Connection - TLS Required',
  invalidSubject: 'Invalid Subject',
  invalidPublishSubject: 'Invalid Publish Subject',
  invalidProtocol: 'invalid client protocol',
  noRespondersNeedsHeaders: 'no responders requires headers support',
  maxConnections: 'maximum connections exceeded',
} as const;

export const pubViolation = (subject: string) =>
  `Permissions Violation for Publish to ${JSON.stringify(subject)}`;
export const subViolation = (subject: string, queue: string | undefined) =>
  `Permissions Violation for Subscription to ${JSON.stringify(subject)}` +
  (queue === undefined ? '' : ` using queue ${JSON.stringify(queue)}`);

export const errLine = (text: string) => Buffer.from(`-ERR '${text}'\r\n`, 'utf8');

export const OK = Buffer.from('+OK\r\n');
export const PING = Buffer.from('PING\r\n');
export const PONG = Buffer.from('PONG\r\n');
/** Header block of a no-responders status message. */
export const NO_RESPONDERS = Buffer.from('NATS/1.0 503\r\n\r\n');

/** The NATS server version announced in INFO (the protocol features served are those of 2.9). */
export const ANNOUNCED_VERSION = '2.9.0';

/** What a client may send in CONNECT (unknown fields are ignored, as nats-server does). */
export interface ConnectOptions {
  verbose?: boolean;
  pedantic?: boolean;
  echo?: boolean;
  headers?: boolean;
  no_responders?: boolean;
  protocol?: number;
  name?: string;
  lang?: string;
  version?: string;
  user?: string;
  pass?: string;
  auth_token?: string;
  tls_required?: boolean;
}
