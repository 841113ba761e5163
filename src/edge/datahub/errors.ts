/** Named errors of the DataHub, each with a stable `code` (nats.js style: one class per failure). */
export class DataHubError extends Error {
  readonly code: string;
  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'DataHubError';
    this.code = code;
  }
}

export class InvalidSubjectError extends DataHubError {
  constructor(subject: string, what: 'subject' | 'pattern') {
    super('invalid_subject', `invalid ${what} "${subject}"`);
    this.name = 'InvalidSubjectError';
  }
}

export class RequestTimeoutError extends DataHubError {
  constructor(subject: string, timeoutMs: number) {
    super('timeout', `request to "${subject}" got no reply within ${timeoutMs} ms`);
    this.name = 'RequestTimeoutError';
  }
}

export class NoRespondersError extends DataHubError {
  constructor(subject: string) {
    super('no_responders', `no subscriber answers requests on "${subject}"`);
    this.name = 'NoRespondersError';
  }
}

export class ClosedError extends DataHubError {
  constructor() {
    super('closed', 'the DataHub is closed');
    this.name = 'ClosedError';
  }
}
