/** The badge of a task's or a subtask's status. */
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
