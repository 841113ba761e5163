/**
 * The worker thread of the live script processors (see `LiveScripts` in live-scripts.ts): holds
 * one QuickJS isolate per running script instance and runs their messages in order, so that a
 * script's time, memory and outputs never touch the edge's main loop or heap.
 */
import { serveJobs } from '../../kernel/sandbox/worker.js';
import type { LiveScriptJob, LiveScriptReply } from './live-scripts.js';
import { loadQuickJs, quickJs, ScriptSandbox } from './script.js';

const sandboxes = new Map<string, { sandbox: ScriptSandbox; parameters: string }>();

// Loaded while the worker waits for its first job (not counted in a job's deadline).
const loading = loadQuickJs();

serveJobs<LiveScriptJob, LiveScriptReply>((job) => {
  switch (job.op) {
    case 'create':
    case 'ensure': {
      const had = sandboxes.get(job.key);
      if (had && job.op === 'ensure') return { ok: true, result: undefined, console: [] };
      had?.sandbox.dispose();
      sandboxes.delete(job.key);
      const made = ScriptSandbox.createSync(quickJs(), job.source, job.limits);
      if ('error' in made) return { ok: false, failure: made.failure, error: made.error, console: [] };
      sandboxes.set(job.key, { sandbox: made.sandbox, parameters: job.parameters });
      return { ok: true, result: undefined, console: made.console };
    }
    case 'call': {
      const s = sandboxes.get(job.key);
      if (!s) return { ok: false, failure: 'error', error: 'the script is not running', console: [] };
      return s.sandbox.call(job.message, job.payload, s.parameters, job.variables);
    }
    case 'dispose':
      sandboxes.get(job.key)?.sandbox.dispose();
      sandboxes.delete(job.key);
      return { ok: true, result: undefined, console: [] };
  }
}, loading);
