/**
 * The worker thread of `TestProcessorScript` (see `ScriptTester` in playground.ts): runs one test
 * at a time in a QuickJS module of its own, so that a test's time, memory and outputs never touch
 * the edge's main loop or heap.
 */
import { serveJobs } from '../../kernel/sandbox/worker.js';
import { loadQuickJs } from './script.js';
import { testScript, type ScriptTest, type ScriptTestBounds, type ScriptTestResult } from './playground.js';

// Loaded while the worker waits for its first test (not counted in the test's wall time).
serveJobs<{ test: ScriptTest; bounds: ScriptTestBounds }, ScriptTestResult>(
  (job) => testScript(job.test, job.bounds),
  loadQuickJs(),
);
