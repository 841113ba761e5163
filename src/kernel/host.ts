/** The facts of the machine a service runs on (the edge's link heartbeat, `/dm/host/info`). */
import os from 'node:os';

export function hostFacts(): Record<string, unknown> {
  return {
    hostname: os.hostname(),
    os: os.type(),
    platform: os.platform(),
    release: os.release(),
    arch: os.arch(),
    cpus: os.cpus().length,
    memoryBytes: os.totalmem(),
    node: process.version,
  };
}
