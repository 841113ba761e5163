/** Asynchronous tasks of the manager: subtasks claimed under a lease, retried and taken over. */
export { tasksModule } from './module.js';
export {
  TaskService,
  TASK_LIMITS,
  type NewTask,
  type SubtaskContext,
  type SubtaskOutcome,
  type TaskHandler,
} from './service.js';
