/**
 * The state machine of an integration instance (`InstanceState`, contract parts 2.3 and 3):
 *
 * | from          | to            | when                                                        |
 * | ------------- | ------------- | ----------------------------------------------------------- |
 * | Configured    | Connecting    | the instance starts enabled (created, edge started, updated) |
 * | Configured    | Disabled      | the instance starts with Enabled false                       |
 * | Connecting    | Connected     | the remote accepted the connection (and the subscriptions)   |
 * | Connecting    | Disconnected  | the attempt failed: unreachable, refused login, bad certificate... (reason kept) |
 * | Connected     | Disconnected  | the link broke or a send failed (reason kept)                |
 * | Disconnected  | Connecting    | after reconnectInterval                                      |
 * | any           | Disabled      | Enabled set to false, or the instance is stopped             |
 * | Disabled      | Configured    | Enabled set to true again                                    |
 *
 * Outgoing messages are queued on disk in every state but Disabled.
 */
export const INSTANCE_STATES = ['Configured', 'Connecting', 'Connected', 'Disconnected', 'Disabled'] as const;
export type InstanceState = (typeof INSTANCE_STATES)[number];

const MOVES: Record<InstanceState, readonly InstanceState[]> = {
  Configured: ['Connecting', 'Disabled'],
  Connecting: ['Connected', 'Disconnected', 'Disabled'],
  Connected: ['Disconnected', 'Disabled'],
  Disconnected: ['Connecting', 'Disabled'],
  Disabled: ['Configured'],
};

export function canMove(from: InstanceState, to: InstanceState): boolean {
  return MOVES[from].includes(to);
}

export class IllegalTransitionError extends Error {
  constructor(from: InstanceState, to: InstanceState) {
    super(`integration instance cannot move from ${from} to ${to}`);
    this.name = 'IllegalTransitionError';
  }
}

/** The current state with its reason and the time it was entered. */
export class StateMachine {
  state: InstanceState = 'Configured';
  reason = '';
  since = Date.now();
  /** Called after every move. */
  onChange: ((state: InstanceState, reason: string) => void) | undefined;

  move(to: InstanceState, reason = ''): void {
    if (!canMove(this.state, to)) throw new IllegalTransitionError(this.state, to);
    this.state = to;
    this.reason = reason;
    this.since = Date.now();
    this.onChange?.(to, reason);
  }
}
