/**
 * Browse tasks and the cart. A browse task lists a device's address space once (through the
 * `Browser` its driver registered) and keeps the result in memory; tags are then created from a
 * selection of folders, at once (`BrowseTask_CreateRegistersByFoldersSelection`) or collected in
 * the caller's cart first (`Cart_AddItemsByFoldersSelection`, then `Cart_CreateRegisters`).
 *
 * The Generator browses itself here; the drivers that talk to machines (OPC UA, MQTT) register
 * their browsers with `DeviceHubService`'s owner through `BrowseService.registerBrowser`.
 */
import { badRequest, notFound } from '../../kernel/errors.js';
import { uuidv7 } from '../../kernel/ids.js';
import { findDriver, type DriverDef } from './catalogue/index.js';
import type { DeviceHubService } from './service.js';
import type { DeviceConfig, Register } from './types.js';

/** One node of a device's address space. */
export interface BrowseNode {
  Name: string;
  Description?: string;
  /** Leaves only. */
  RegisterName?: string;
  ValueType?: string;
  Properties?: Array<{ Name: string; Value: string }>;
  Children?: BrowseNode[];
}

/** Lists a device's address space (the device in the domain shape, properties with defaults). */
export type Browser = (device: DeviceConfig, driver: DriverDef) => Promise<BrowseNode[]>;

export interface BrowseTaskItem {
  ID: string;
  TaskID: string;
  DeviceID: string;
  Path: string;
  Name: string;
  IsFolder: boolean;
  RegisterName: string | null;
  ValueType: string | null;
  Properties: Array<{ Name: string; Value: string }>;
  Description: string;
  ParentPath: string;
}

export interface BrowseTask {
  ID: string;
  DeviceID: string;
  State: 'Running' | 'Done' | 'Failed';
  Error: string | null;
  ItemCount: number;
  CreationTime: string;
  items: BrowseTaskItem[];
}

export interface FoldersSelection {
  TaskID: string;
  Folders: string[];
  Recursive?: boolean | null;
  IntervalMs?: number | null;
  PublishCoV?: boolean | null;
}

interface CartEntry {
  item: BrowseTaskItem;
  IntervalMs: number | null;
  PublishCoV: boolean | null;
}

const MAX_TASKS = 100;
const MAX_CART = 10000;

/** The Generator's address space: a folder per signal register, ten addresses each. */
export const generatorBrowser: Browser = async (_device, driver) =>
  driver.registers.map((reg) => ({
    Name: reg.name,
    Description: reg.description,
    Children: Array.from({ length: 10 }, (_, address) => ({
      Name: `${reg.name}_${address}`,
      Description: `${reg.description}, address ${address}`,
      RegisterName: reg.name,
      ValueType: reg.valueTypes.includes('float64') ? 'float64' : reg.valueTypes[0]!,
      Properties: [{ Name: 'address', Value: String(address) }],
    })),
  }));

export class BrowseService {
  readonly #browsers = new Map<string, Browser>([['generator', generatorBrowser]]);
  readonly #tasks = new Map<string, BrowseTask>();
  readonly #carts = new Map<string, CartEntry[]>();

  constructor(private readonly devices: DeviceHubService) {}

  /** Lets a driver (by catalogue key) browse its devices. */
  registerBrowser(driverKey: string, browser: Browser): void {
    this.#browsers.set(driverKey, browser);
  }

  async createTask(deviceId: string): Promise<BrowseTask> {
    const [device] = await this.devices.readModel.devices([deviceId]);
    if (!device) throw notFound(`device ${JSON.stringify(deviceId)} not found`);
    const driver = findDriver(device.driverId)!;
    const browser = this.#browsers.get(driver.key);
    if (!browser) {
      const can = [...this.#browsers.keys()].join(', ');
      throw badRequest(
        `device ${JSON.stringify(device.name)}: driver "${driver.name}" cannot browse in this build; drivers that can: ${can}`,
      );
    }
    const task: BrowseTask = {
      ID: uuidv7(),
      DeviceID: device.id,
      State: 'Running',
      Error: null,
      ItemCount: 0,
      CreationTime: new Date().toISOString(),
      items: [],
    };
    this.#tasks.set(task.ID, task);
    while (this.#tasks.size > MAX_TASKS) this.#tasks.delete(this.#tasks.keys().next().value!);
    const run = browser(device, driver).then(
      (nodes) => {
        task.items = flatten(task, nodes, '');
        task.ItemCount = task.items.length;
        task.State = 'Done';
      },
      (err: unknown) => {
        task.State = 'Failed';
        task.Error = err instanceof Error ? err.message : String(err);
      },
    );
    // A quick browse (the Generator's) answers finished; a slow one answers Running.
    await Promise.race([run, new Promise((r) => setTimeout(r, 200))]);
    return task;
  }

  getTask(id: string): BrowseTask | null {
    return this.#tasks.get(id) ?? null;
  }

  listItems(input: { TaskID: string; Path?: string | null; Limit?: number | null; Offset?: number | null }) {
    const task = this.#doneTask(input.TaskID);
    const parent = input.Path ?? '';
    const items = task.items.filter((i) => i.ParentPath === parent);
    const limit = Math.min(Math.max(input.Limit ?? 100, 1), 1000);
    const offset = Math.max(input.Offset ?? 0, 0);
    return { Items: items.slice(offset, offset + limit), Total: items.length };
  }

  /** Leaves under the selected folders. */
  select(sel: FoldersSelection): BrowseTaskItem[] {
    const task = this.#doneTask(sel.TaskID);
    if (sel.Folders.length === 0) throw badRequest('Folders is empty; name at least one folder path');
    const recursive = sel.Recursive ?? true;
    const out = new Map<string, BrowseTaskItem>();
    for (const folder of sel.Folders) {
      const f = task.items.find((i) => i.Path === folder && i.IsFolder);
      if (!f) {
        const roots = task.items.filter((i) => i.IsFolder && i.ParentPath === '').map((i) => i.Path);
        throw badRequest(
          `browse task ${task.ID}: folder ${JSON.stringify(folder)} does not exist; top folders: ${roots.join(', ')}`,
        );
      }
      for (const item of task.items) {
        if (item.IsFolder) continue;
        const inside = recursive ? item.Path.startsWith(`${folder}/`) : item.ParentPath === folder;
        if (inside) out.set(item.ID, item);
      }
    }
    return [...out.values()];
  }

  async createRegisters(sel: FoldersSelection) {
    const items = this.select(sel);
    return this.#create(
      items.map((item) => ({ item, IntervalMs: sel.IntervalMs ?? null, PublishCoV: sel.PublishCoV ?? null })),
    );
  }

  addToCart(owner: string, sel: FoldersSelection) {
    const cart = this.#carts.get(owner) ?? [];
    const have = new Set(cart.map((e) => `${e.item.DeviceID}/${e.item.Path}`));
    for (const item of this.select(sel)) {
      if (have.has(`${item.DeviceID}/${item.Path}`)) continue;
      if (cart.length >= MAX_CART) throw badRequest(`the cart holds at most ${MAX_CART} items`);
      cart.push({ item, IntervalMs: sel.IntervalMs ?? null, PublishCoV: sel.PublishCoV ?? null });
    }
    this.#carts.set(owner, cart);
    return this.cart(owner);
  }

  cart(owner: string) {
    const items = (this.#carts.get(owner) ?? []).map((e) => e.item);
    return { Items: items, Total: items.length };
  }

  clearCart(owner: string) {
    this.#carts.delete(owner);
    return this.cart(owner);
  }

  async createFromCart(owner: string) {
    const result = await this.#create(this.#carts.get(owner) ?? []);
    this.#carts.delete(owner);
    return result;
  }

  async #create(entries: CartEntry[]): Promise<{ Registers: Register[]; Created: number; Skipped: number }> {
    const deviceIds = [...new Set(entries.map((e) => e.item.DeviceID))];
    const existing = new Set(
      (await this.devices.readModel.tagsOfDevices(deviceIds)).map((t) => `${t.deviceId}\u0000${t.tagName}`),
    );
    const inputs = [];
    let skipped = 0;
    for (const e of entries) {
      const tagName = e.item.Name.replace(/[^A-Za-z0-9_\-:]/g, '_');
      if (existing.has(`${e.item.DeviceID}\u0000${tagName}`)) {
        skipped++;
        continue;
      }
      existing.add(`${e.item.DeviceID}\u0000${tagName}`);
      inputs.push({
        DeviceID: e.item.DeviceID,
        Name: e.item.RegisterName!,
        TagName: tagName,
        ValueType: e.item.ValueType!,
        Description: e.item.Description,
        IntervalMs: e.IntervalMs,
        PublishCoV: e.PublishCoV,
        Properties: e.item.Properties,
      });
    }
    const registers = await this.devices.createRegisters(inputs);
    return { Registers: registers, Created: registers.length, Skipped: skipped };
  }

  #doneTask(id: string): BrowseTask {
    const task = this.#tasks.get(id);
    if (!task) throw notFound(`browse task ${JSON.stringify(id)} not found`);
    if (task.State === 'Running')
      throw badRequest(`browse task ${id} is still running; ask GetBrowseTask until it is Done`);
    if (task.State === 'Failed') throw badRequest(`browse task ${id} failed: ${task.Error}`);
    return task;
  }
}

function flatten(task: BrowseTask, nodes: BrowseNode[], parent: string): BrowseTaskItem[] {
  const out: BrowseTaskItem[] = [];
  for (const n of nodes) {
    const path = parent ? `${parent}/${n.Name}` : n.Name;
    const isFolder = n.Children !== undefined;
    out.push({
      ID: `${task.ID}:${path}`,
      TaskID: task.ID,
      DeviceID: task.DeviceID,
      Path: path,
      Name: n.Name,
      IsFolder: isFolder,
      RegisterName: isFolder ? null : (n.RegisterName ?? null),
      ValueType: isFolder ? null : (n.ValueType ?? null),
      Properties: n.Properties ?? [],
      Description: n.Description ?? '',
      ParentPath: parent,
    });
    if (n.Children) out.push(...flatten(task, n.Children, path));
  }
  return out;
}
