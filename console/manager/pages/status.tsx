/** The badges of a task's or a subtask's status, and of a device's online state. */
import { Badge } from '../../shared/ui.js';

const TONE: Record<string, 'ok' | 'warn' | 'bad' | 'info'> = {
  SUCCEEDED: 'ok',
  RUNNING: 'info',
  PENDING: 'warn',
  RETRY: 'warn',
  FAILED: 'bad',
  CANCELLED: 'bad',
};

export function StatusBadge(props: { status: string }) {
  return <Badge tone={TONE[props.status] ?? 'info'}>{props.status}</Badge>;
}

export function StateBadge(props: { online: boolean }) {
  return <Badge tone={props.online ? 'ok' : 'bad'}>{props.online ? 'Online' : 'Offline'}</Badge>;
}
