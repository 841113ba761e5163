/**
 * The edge's end of high availability (HA): its role in a pair of edges, as the manager grants
 * it over the link (`lease` / `ha` messages of kernel/link/protocol.ts), and the fence that
 * acquisition obeys. A paired edge polls only while it holds an unexpired lease as `active` for
 * the newest epoch it has seen; the lease runs from the moment the edge SENT the request the
 * manager granted, so the edge's own clock ends it no later than the manager's books do. An edge
 * that loses its link stops polling when its lease runs out (it cannot know it is still active).
 *
 * The pair and the newest epoch are kept in the edge's database (`dm_setting`): a paired edge
 * that starts again does not poll until the manager grants it the role again.
 */
import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import type { SettingsTable } from '../../kernel/db/settings.js';
import type { HaRole, HaRoleMessage, LinkMessage } from '../../kernel/link/protocol.js';

/** Lease requests remembered while their answer is awaited (older ones are forgotten). */
export const HA_MAX_OUTSTANDING = 8;

export interface HaRoleView {
  /** `standalone`: not paired; the edge polls as any edge. */
  role: 'standalone' | 'active' | 'standby';
  paired: boolean;
  /** Kept for clients of the earlier shape; the pair's devices are on the manager. */
  peer: null;
  epoch: number;
  pairId: string | null;
  /** Whether acquisition polls now. */
  polling: boolean;
  /** Milliseconds left of the lease (0 when none is held). */
  leaseRemainingMs: number;
  leaseMs: number;
  /** Whether the link to the manager is up. */
  linked: boolean;
}

export class HaState {
  readonly #settings: SettingsTable;
  readonly #log: Logger;
  #pairId: string | null = null;
  #epoch = 0;
  #role: HaRole = 'none';
  #leaseMs = 0;
  /** performance.now() when the lease ends (0: none held). */
  #leaseUntil = 0;
  #seq = 0;
  /** Lease requests awaiting their answer: seq → performance.now() when sent. */
  readonly #outstanding = new Map<number, number>();
  #send: ((m: LinkMessage) => void) | null = null;
  #renewTimer: NodeJS.Timeout | undefined;
  #fenceTimer: NodeJS.Timeout | undefined;
  #polling = true;
  readonly #listeners = new Set<(polling: boolean) => void>();

  constructor(settings: SettingsTable, logger: Logger) {
    this.#settings = settings;
    this.#log = logger;
  }

  /** Reads the pair kept from an earlier run: a paired edge starts fenced. */
  async load(): Promise<void> {
    const pair = await this.#settings.get('ha_pair');
    if (pair) {
      this.#pairId = pair;
      this.#epoch = Number((await this.#settings.get('ha_epoch')) ?? 0) || 0;
      this.#role = 'standby';
      this.#leaseMs = Number((await this.#settings.get('ha_lease_ms')) ?? 0) || 0;
    }
    this.#evaluate();
  }

  /** Whether acquisition may poll now. */
  get polling(): boolean {
    return this.#polling;
  }

  /** Calls `listener` on each change of `polling`. */
  onChange(listener: (polling: boolean) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  view(): HaRoleView {
    const left = this.#leaseUntil > 0 ? Math.max(0, Math.round(this.#leaseUntil - performance.now())) : 0;
    return {
      role: this.#role === 'none' ? 'standalone' : this.#role,
      paired: this.#pairId !== null,
      peer: null,
      epoch: this.#epoch,
      pairId: this.#pairId,
      polling: this.#polling,
      leaseRemainingMs: this.#role === 'active' ? left : 0,
      leaseMs: this.#leaseMs,
      linked: this.#send !== null,
    };
  }

  /** The link is up (after the welcome): a paired edge asks for its role at once. */
  linked(send: (m: LinkMessage) => void): void {
    this.#send = send;
    if (this.#pairId) this.#request();
    this.#schedule();
  }

  /** The link is down: no renewals; the lease runs out by itself (the fence). */
  unlinked(): void {
    this.#send = null;
    this.#outstanding.clear();
    clearInterval(this.#renewTimer);
    this.#renewTimer = undefined;
  }

  /** An `ha` message from the manager. */
  async onMessage(m: HaRoleMessage): Promise<void> {
    const sentAt = m.seq === undefined ? undefined : this.#outstanding.get(m.seq);
    if (m.seq !== undefined) {
      if (sentAt === undefined) return; // an answer to a request forgotten: ignored
      this.#outstanding.delete(m.seq);
    }
    if (m.role === 'none' || !m.pairId) return this.#unpair();
    const samePair = m.pairId === this.#pairId;
    if (samePair && m.epoch < this.#epoch) return; // an older epoch than one seen: ignored
    const changed = !samePair || m.epoch !== this.#epoch || this.#leaseMs !== m.leaseMs;
    this.#pairId = m.pairId;
    this.#epoch = m.epoch;
    this.#leaseMs = Math.max(0, m.leaseMs);
    const before = this.#role;
    this.#role = m.role;
    if (m.role === 'active' && sentAt !== undefined) this.#leaseUntil = sentAt + this.#leaseMs;
    else if (m.role !== 'active' || !samePair || changed) this.#leaseUntil = 0;
    if (changed) await this.#persist();
    if (before !== m.role || changed)
      this.#log.info({ role: m.role, epoch: m.epoch, pairId: m.pairId }, 'high availability role');
    // News of the active role: ask for the lease at once.
    if (m.role === 'active' && sentAt === undefined) this.#request();
    this.#schedule();
    this.#evaluate();
  }

  /** Forgets the pair (unpaired by the manager, or the edge left its manager): it polls freely. */
  async clear(): Promise<void> {
    await this.#unpair();
  }

  close(): void {
    clearInterval(this.#renewTimer);
    clearTimeout(this.#fenceTimer);
    this.#listeners.clear();
  }

  async #unpair(): Promise<void> {
    const had = this.#pairId !== null;
    this.#pairId = null;
    this.#role = 'none';
    this.#epoch = 0;
    this.#leaseUntil = 0;
    if (had) {
      await this.#persist();
      this.#log.info('high availability: this edge is no longer paired');
    }
    this.#schedule();
    this.#evaluate();
  }

  async #persist(): Promise<void> {
    await this.#settings.put('ha_pair', this.#pairId ?? '');
    await this.#settings.put('ha_epoch', String(this.#epoch));
    await this.#settings.put('ha_lease_ms', String(this.#leaseMs));
  }

  #request(): void {
    if (!this.#send) return;
    const seq = ++this.#seq;
    this.#outstanding.set(seq, performance.now());
    while (this.#outstanding.size > HA_MAX_OUTSTANDING) {
      this.#outstanding.delete(this.#outstanding.keys().next().value!);
    }
    this.#send({ t: 'lease', seq });
  }

  /** Renewals every third of the lease while paired and linked. */
  #schedule(): void {
    clearInterval(this.#renewTimer);
    this.#renewTimer = undefined;
    if (!this.#pairId || !this.#send) return;
    const every = Math.max(100, Math.floor((this.#leaseMs || 3000) / 3));
    this.#renewTimer = setInterval(() => this.#request(), every);
    this.#renewTimer.unref();
  }

  /** Recomputes `polling`, tells the listeners of a change, and wakes up when the lease ends. */
  #evaluate(): void {
    clearTimeout(this.#fenceTimer);
    const now = performance.now();
    const polling = this.#pairId === null || (this.#role === 'active' && now < this.#leaseUntil);
    if (polling && this.#pairId !== null) {
      this.#fenceTimer = setTimeout(() => this.#evaluate(), Math.max(1, this.#leaseUntil - now));
      this.#fenceTimer.unref();
    }
    if (polling === this.#polling) return;
    this.#polling = polling;
    if (!polling && this.#pairId !== null && this.#role === 'active')
      this.#log.warn({ epoch: this.#epoch }, 'high availability: lease ran out; polling stops (fenced)');
    for (const l of this.#listeners) l(polling);
  }
}
