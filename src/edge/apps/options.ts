/** The applications module's settings: where the container engine listens, and its bounds. */
import { Type } from '@sinclair/typebox';
import { Option } from '../../kernel/service/options.js';

export const appsOptions = Type.Object({
  appsEngineSocket: Option.optional.path({
    description:
      'unix socket of the Docker Engine API (Docker or `podman system service`); default: /var/run/docker.sock, else $XDG_RUNTIME_DIR/podman/podman.sock, else /run/podman/podman.sock, the first that exists',
  }),
  appsEngineTimeout: Option.int({
    minimum: 100,
    maximum: 600_000,
    default: 15_000,
    description: 'ms a request to the container engine may take (an image pull: ten times as long)',
  }),
  appsStatsInterval: Option.int({
    minimum: 1,
    maximum: 3600,
    default: 5,
    description: 'seconds between two CPU and memory samples of the dashboard (while it is being read)',
  }),
  appsStatsHistory: Option.int({
    minimum: 10,
    maximum: 86_400,
    default: 3600,
    description: 'seconds of CPU and memory history kept per container; the most cpuHistorySeconds may ask',
  }),
  appsMaxContainers: Option.int({
    minimum: 1,
    maximum: 100_000,
    default: 1000,
    description: 'containers, images and networks read from the engine at most per list',
  }),
});
