/** The OPC UA server's settings: a change over the stored ones, checked. */
import { badRequest } from '../../kernel/errors.js';
import { SECURITY_MODES, SECURITY_POLICIES, type ServerSettings } from './types.js';

/** `input` over `base` (null and undefined keep the value), checked as UpdateServerSettings does. */
export function resolveSettings(base: ServerSettings, input: Partial<ServerSettings>): ServerSettings {
  const next: ServerSettings = { ...base };
  for (const [k, v] of Object.entries(input) as Array<[keyof ServerSettings, unknown]>) {
    if (v === null || v === undefined) continue;
    (next as unknown as Record<string, unknown>)[k] = v;
  }
  if (next.securityPolicies.length === 0) throw badRequest('SecurityPolicies must name at least one policy');
  if (next.securityModes.length === 0) throw badRequest('SecurityModes must name at least one mode');
  for (const p of next.securityPolicies)
    if (!SECURITY_POLICIES.includes(p)) throw badRequest(`security policy ${String(p)} is not offered`);
  for (const m of next.securityModes)
    if (!SECURITY_MODES.includes(m)) throw badRequest(`security mode ${String(m)} is not offered`);
  const hasNone = next.securityPolicies.includes('None');
  const hasSecure = next.securityPolicies.some((p) => p !== 'None');
  if (next.securityModes.includes('None') && !hasNone)
    throw badRequest('security mode None needs security policy None');
  if (next.securityModes.some((m) => m !== 'None') && !hasSecure)
    throw badRequest('security modes Sign and SignAndEncrypt need a policy other than None');
  if (!Number.isInteger(next.maxSessions) || next.maxSessions < 1 || next.maxSessions > 10_000)
    throw badRequest('MaxSessions must be between 1 and 10000');
  return next;
}
