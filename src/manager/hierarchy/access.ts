/**
 * Who may do what in a company's asset hierarchy. A role on the company covers the whole tree (a
 * viewer reads, an operator edits nodes, an admin also manages templates and grants); a branch
 * grant gives a user `read` or `edit` on one node and everything under it. A node the caller
 * cannot read is answered as not found; one it reads but may not change is a 403.
 */
import { forbidden, notFound } from '../../kernel/errors.js';
import { roleAt, type Principal } from '../auth/index.js';
import type { Access, GrantWithPath, NodeRow } from './repository.js';

/** What a caller may do on a node: manage (company admin), edit, read, or nothing. */
export type Level = 'admin' | 'edit' | 'read' | null;
const RANK = { admin: 3, edit: 2, read: 1 } as const;

/** The caller in one company: its company-wide level and its branch grants there. */
export interface CompanyAccess {
  companyId: string;
  companyName: string;
  principal: Principal;
  /** From a role on the company (or a global role); null when only branch grants apply. */
  companyLevel: Level;
  grants: GrantWithPath[];
}

export function companyLevelOf(principal: Principal, companyId: string): Level {
  const role = roleAt(principal, { companyId });
  return role === 'admin' ? 'admin' : role === 'operator' ? 'edit' : role === 'viewer' ? 'read' : null;
}

function stronger(a: Level, b: Level): Level {
  if (a === null) return b;
  if (b === null) return a;
  return RANK[a] >= RANK[b] ? a : b;
}

/** The caller's level on the node at `path` (its own grants on it and on its ancestors count). */
export function levelAt(access: CompanyAccess, path: string): Level {
  let level = access.companyLevel;
  for (const g of access.grants) {
    if (path.startsWith(g.path)) level = stronger(level, g.access as Access);
  }
  return level;
}

/** Throws unless the caller holds at least `needed` on `node` (404 when it cannot even read it). */
export function requireNode(
  access: CompanyAccess,
  node: NodeRow | undefined,
  needed: Exclude<Level, null>,
  id: string,
) {
  const level = node ? levelAt(access, node.path) : null;
  if (!node || level === null) throw notFound(`node "${id}" not found in company "${access.companyName}"`);
  if (RANK[level] < RANK[needed]) {
    throw forbidden(
      `this call needs ${needed === 'admin' ? 'the admin role on the company' : `${needed} access`} to node "${node.name}" (the caller has ${level} access)`,
    );
  }
  return node;
}

/** Throws 403 unless the caller holds at least `needed` on the whole company. */
export function requireCompany(access: CompanyAccess, needed: Exclude<Level, null>, what: string) {
  const level = access.companyLevel;
  if (level === null || RANK[level] < RANK[needed]) {
    const role = needed === 'admin' ? 'admin' : needed === 'edit' ? 'operator' : 'viewer';
    throw forbidden(
      `${what} needs the ${role} role on company "${access.companyName}"${access.grants.length ? ' (branch grants cover their branches only)' : ''}`,
    );
  }
}

/** The top-most nodes the caller reads through grants alone (not under another granted node). */
export function grantedTops(access: CompanyAccess): GrantWithPath[] {
  const sorted = [...access.grants].sort((a, b) => a.path.length - b.path.length);
  const tops: GrantWithPath[] = [];
  for (const g of sorted) if (!tops.some((t) => g.path.startsWith(t.path))) tops.push(g);
  return tops;
}
