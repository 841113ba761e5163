/**
 * Asynchronous tasks on the manager's seam: the task tables, the runner (started once the links
 * can be reached, stopped before them) and the task routes on both APIs. Other modules register
 * their task types (`tasks.register(handler)`) in their `start`.
 */
import type { ManagerModule } from '../modules.js';
import { tasksOptions } from './options.js';
import { taskMigrations } from './migrations/index.js';
import { TaskRepository } from './repository.js';
import { adminTaskRoutes, taskRoutes } from './routes.js';
import { TaskService } from './service.js';

declare module '../modules.js' {
  interface ManagerModules {
    tasks: TaskService;
  }
}

export const tasksModule: ManagerModule<'tasks', typeof tasksOptions> = {
  name: 'tasks',
  options: tasksOptions,
  migrations: taskMigrations,
  requires: ['admin', 'link'],
  start(ctx) {
    const hub = ctx.module('link');
    return new TaskService(new TaskRepository(ctx.database), ctx.logger, {
      concurrency: ctx.config.taskConcurrency,
      leaseMs: ctx.config.taskLease,
      pollMs: 250,
      backoffBaseMs: 1000,
      backoffMaxMs: 60_000,
      linked: () => hub.linkedDevices(),
      onLinked: (l) => hub.onLinked(l),
    });
  },
  async mount(ctx, tasks) {
    await ctx.app.register(taskRoutes, { tasks });
    await ctx.module('admin').app.register(adminTaskRoutes, { tasks });
  },
  listening: (_ctx, tasks) => tasks.start(),
  close: (tasks) => tasks.stop(),
};
