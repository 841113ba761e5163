/**
 * The graph of processor instances: the check of an instance's inputs (references that exist, no
 * cycle), copies that keep the references among the copied, and the rewiring of inputs.
 */
import { badRequest } from '../../kernel/errors.js';
import { uuidv7 } from '../../kernel/ids.js';
import { checkParameters, LIMITS } from './catalogue.js';
import { compileExpression } from './processors.js';
import type { Instance, Position } from './repository.js';
import type { AnalyticsService } from './service.js';

/** Checks kind and parameters, processor references and the graph (no cycles). */
export function checkedParameters(
  svc: AnalyticsService,
  id: string,
  kind: string,
  parameters: unknown,
): Instance['parameters'] {
  const p = checkParameters(kind, parameters);
  if (kind === 'expression') compileExpression(p.expression as string);
  for (const [k, input] of p.inputs.entries()) {
    if (input.processor !== undefined) {
      if (input.processor === id)
        throw badRequest(`Parameters.inputs[${k}]: an instance cannot read its own output`);
      if (!svc.instances.has(input.processor))
        throw badRequest(`Parameters.inputs[${k}]: processor instance ${input.processor} not found`);
    } else if (!/^[^\s]+$/.test(input.subject!) || /(^|\.)\.|\.$/.test(input.subject!)) {
      throw badRequest(`Parameters.inputs[${k}].subject "${input.subject}" is not a subject`);
    }
  }
  // Cycle check: from the processors it reads, following their inputs, we must not come back.
  const seen = new Set<string>();
  const stack = p.inputs.flatMap((i) => (i.processor ? [i.processor] : []));
  while (stack.length) {
    const cur = stack.pop()!;
    if (cur === id) throw badRequest('Parameters.inputs: the processors would form a cycle');
    if (seen.has(cur)) continue;
    seen.add(cur);
    for (const i of svc.instances.get(cur)?.parameters.inputs ?? []) if (i.processor) stack.push(i.processor);
  }
  return p;
}

/**
 * Copies instances (into their workspace or another one), shifted by `offset`; inputs that read
 * another copied instance read its copy.
 */
export async function copy(
  svc: AnalyticsService,
  ids: string[],
  targetWorkspaceId: string | undefined,
  offset: Position,
): Promise<Instance[]> {
  const sources = ids.map((id) => svc.instance(id));
  const map = new Map(sources.map((s) => [s.id, uuidv7()]));
  // Copies in an order where the instances they read come first.
  const ordered: Instance[] = [];
  const done = new Set<string>();
  const visit = (s: Instance) => {
    if (done.has(s.id)) return;
    done.add(s.id);
    for (const i of s.parameters.inputs)
      if (i.processor && map.has(i.processor)) visit(svc.instance(i.processor));
    ordered.push(s);
  };
  sources.forEach(visit);
  const out: Instance[] = [];
  for (const s of ordered) {
    const ws = targetWorkspaceId ?? s.workspaceId;
    out.push(
      await svc.createInstance(
        {
          workspaceId: ws,
          groupId: ws === s.workspaceId ? s.groupId : null,
          name: `${s.name} (copy)`.slice(0, LIMITS.maxNameLength),
          kind: s.kind,
          enabled: s.enabled,
          position: { x: s.position.x + offset.x, y: s.position.y + offset.y },
          parameters: {
            ...s.parameters,
            inputs: s.parameters.inputs.map((i) =>
              i.processor && map.has(i.processor) ? { ...i, processor: map.get(i.processor)! } : i,
            ),
          },
        },
        map.get(s.id),
      ),
    );
  }
  return ids.map((id) => out.find((o) => o.id === map.get(id))!);
}

/**
 * Rewires inputs: every input that reads `from` (a processor ID or a subject) reads `to` instead,
 * in the given instances or in every instance.
 */
export async function reconnect(
  svc: AnalyticsService,
  input: {
    ids?: string[] | null;
    fromProcessor?: string | null;
    toProcessor?: string | null;
    fromSubject?: string | null;
    toSubject?: string | null;
  },
): Promise<Instance[]> {
  if ((input.fromProcessor == null) === (input.fromSubject == null))
    throw badRequest('give exactly one of FromProcessorID and FromSubject');
  if ((input.toProcessor == null) === (input.toSubject == null))
    throw badRequest('give exactly one of ToProcessorID and ToSubject');
  const targets = input.ids?.length ? input.ids.map((id) => svc.instance(id)) : [...svc.instances.values()];
  const changed: Instance[] = [];
  for (const t of targets) {
    let hit = false;
    const inputs = t.parameters.inputs.map((i) => {
      const match =
        input.fromProcessor != null ? i.processor === input.fromProcessor : i.subject === input.fromSubject;
      if (!match) return i;
      hit = true;
      const { subject: _s, processor: _p, ...rest } = i;
      return input.toProcessor != null
        ? { ...rest, processor: input.toProcessor }
        : { ...rest, subject: input.toSubject! };
    });
    if (hit) changed.push(await svc.updateInstance({ id: t.id, parameters: { ...t.parameters, inputs } }));
  }
  return changed;
}
