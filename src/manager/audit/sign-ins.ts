/**
 * Sign-ins in the audit trail. The manager's API has no sign-in of its own: a client sends its
 * long-lived API token with every call (contract part 5), so a token's use is in the request log
 * (`/admin/v1/logs/v2/api-activity`) and its changes (create, rotate, revoke, by the admin API or
 * the CLI) are records of the trail. What signs in is an edge, on its link (`/dm/link`, its device
 * id and link secret): each success is recorded (actor `device:<id>`, action `link.sign-in`), and
 * so is a wrong secret for a device that exists (outcome `failure`, status 401). The secret never
 * is. An unknown device id is an anonymous refusal, not recorded (as anywhere in the trail).
 *
 * Failures are bounded, so that a device id alone cannot grow the trail: one record per device per
 * `FAILURE_WINDOW_MS`, the attempts refused in between counted on the next record
 * (`details.refusedBefore`); the devices tracked are at most `MAX_TRACKED` (docs/security.md).
 */
import type { Logger } from 'pino';
import type { LinkSignIn } from '../link/index.js';
import type { AuditService } from './service.js';

/** One failure record per device per window. */
export const FAILURE_WINDOW_MS = 60_000;
/** Devices whose recent failures are tracked (the oldest is forgotten beyond it). */
export const MAX_TRACKED = 10_000;

export function linkSignInListener(audit: AuditService, logger: Logger) {
  /** Per device: when its last failure was recorded, and the failures not recorded since. */
  const failures = new Map<string, { recordedAt: number; refused: number }>();
  return (event: LinkSignIn): void => {
    let refusedBefore = 0;
    if (!event.ok) {
      const seen = failures.get(event.deviceId);
      if (seen && event.at - seen.recordedAt < FAILURE_WINDOW_MS) {
        seen.refused++;
        return;
      }
      refusedBefore = seen?.refused ?? 0;
      failures.delete(event.deviceId);
      if (failures.size >= MAX_TRACKED) failures.delete(failures.keys().next().value!);
      failures.set(event.deviceId, { recordedAt: event.at, refused: 0 });
    }
    audit
      .record({
        actor: `device:${event.deviceId}`,
        actorName: null,
        projectId: event.projectId,
        module: 'link',
        action: 'link.sign-in',
        origin: 'API',
        target: `deviceId=${event.deviceId}`,
        outcome: event.ok ? 'success' : 'failure',
        status: event.ok ? 101 : 401,
        details: {
          remote: event.remote,
          ...(event.ok ? {} : { error: 'wrong link secret' }),
          ...(refusedBefore > 0 ? { refusedBefore } : {}),
        },
        at: event.at,
      })
      .catch((err: unknown) => logger.warn({ err }, 'recording a link sign-in failed'));
  };
}
