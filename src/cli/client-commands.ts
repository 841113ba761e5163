/**
 * The client commands: those that talk to a running service over its API, and need none of the
 * services' code (`edge device|tag|driver|watch|write`, `uns watch`). `millwright edge device list`
 * loads only these (src/cli/main.ts), so that it answers in well under a second.
 */
import type { Command } from 'commander';

/** The client subcommands of each service command, for main.ts's routing. */
export const CLIENT_COMMANDS: Readonly<Record<'edge' | 'uns', readonly string[]>> = {
  edge: ['device', 'tag', 'driver', 'watch', 'write'],
  uns: ['watch'],
};

/** Adds the client subcommands of `service` to its command; `only` limits them to one. */
export async function clientCommands(service: 'edge' | 'uns', parent: Command, only?: string): Promise<void> {
  const wants = (name: string) => only === undefined || only === name;
  if (service === 'uns') {
    if (wants('watch')) (await import('./uns-watch.js')).unsWatchCommand(parent);
    return;
  }
  if (wants('device') || wants('tag') || wants('driver')) {
    (await import('./edge-devices.js')).edgeDeviceCommands(parent);
  }
  if (wants('watch') || wants('write')) {
    const m = await import('./edge-watch.js');
    m.edgeWatchCommand(parent);
    m.edgeWriteCommand(parent);
  }
}
