import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { bundleWorkflowCode, type WorkflowBundle } from '@temporalio/worker';
import type { Logger } from '../logging/logger';
import { temporalLoggerFor } from './runtime-logger';

/**
 * The workflow bundle `npm run build` writes beside the compiled code (dist/workflow-bundle.js).
 * A worker that loads it does not run webpack: about 90 MB less resident memory and
 * seconds less start-up (docs/performance.md, P5). From the TypeScript sources (tests,
 * tsx) there is none, and the worker bundles as before.
 */
const COMPILED_ROOT = path.join(__dirname, '..');
const BUNDLE_FILE_NAME = 'workflow-bundle.js';

export function workflowsPath(): string {
  return require.resolve('../workflows');
}

/**
 * Temporal's OpenTelemetry workflow interceptors (DESIGN §17) behind a gate
 * (workflows/tracing-interceptors.ts), always in the bundle: the build id names the
 * bundle, so turning tracing on or off must not change it. A run loads them only when its
 * start carries a trace; with tracing off in this worker its sink drops their spans.
 */
const WORKFLOW_INTERCEPTOR_MODULES: readonly string[] = [require.resolve('../workflows/tracing-interceptors')];

/**
 * Evaluated once per workflow thread and shared by every run (the SDK's `preloadModules`):
 * zod, made cheaper per schema (workflows/shared-zod.ts), where each cached run would
 * otherwise hold a copy of its own (docs/performance.md, P5).
 */
const PRELOADED_MODULES: readonly string[] = [require.resolve('../workflows/shared-zod')];

/** What every bundle of the lifecycle's workflow code is made of (tests bundle with it too). */
export function workflowBundleOptions(): { readonly workflowsPath: string; readonly workflowInterceptorModules: string[]; readonly preloadModules: string[] } {
  return { workflowsPath: workflowsPath(), workflowInterceptorModules: [...WORKFLOW_INTERCEPTOR_MODULES], preloadModules: [...PRELOADED_MODULES] };
}

/** Bundles the workflow code as the worker runs it: from the compiled dist/workflows when compiled. */
export function bundleWorkflows(logger: Logger): Promise<WorkflowBundle> {
  return bundleWorkflowCode({ ...workflowBundleOptions(), logger: temporalLoggerFor(logger.child({ sdkComponent: 'bundler' }, { level: 'warn' })) });
}

/** The newest modification time of the compiled files under `dir`, the bundle aside. */
function newestCompiledFile(dir: string, bundleFile: string): number {
  let newest = 0;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const file = path.join(dir, entry.name);
    if (entry.isDirectory()) newest = Math.max(newest, newestCompiledFile(file, bundleFile));
    else if (entry.name.endsWith('.js') && file !== bundleFile) newest = Math.max(newest, fs.statSync(file).mtimeMs);
  }
  return newest;
}

/**
 * The build's bundle, unless a file was compiled after it (a `tsc` without the bundle
 * step): then its workflow code could differ from the activities beside it, and the
 * worker bundles afresh. `reason` says which, for the worker's log.
 */
export function builtWorkflowBundle(compiledRoot = COMPILED_ROOT): { readonly bundle?: WorkflowBundle; readonly reason: string } {
  const bundleFile = path.join(compiledRoot, BUNDLE_FILE_NAME);
  let written: number;
  try {
    written = fs.statSync(bundleFile).mtimeMs;
  } catch {
    return { reason: `no ${bundleFile} (npm run build writes it)` };
  }
  if (newestCompiledFile(compiledRoot, bundleFile) > written) return { reason: `${bundleFile} is older than the compiled code; npm run build writes it again` };
  return { bundle: { code: fs.readFileSync(bundleFile, 'utf8') }, reason: `the build's ${bundleFile}` };
}

/** Writes the bundle for builtWorkflowBundle(); `npm run build` runs this after tsc. */
export async function writeBuiltWorkflowBundle(logger: Logger): Promise<string> {
  const { code } = await bundleWorkflows(logger);
  const bundleFile = path.join(COMPILED_ROOT, BUNDLE_FILE_NAME);
  // Written aside and renamed: a worker starting meanwhile reads the old bundle or the new, never half of one.
  const partial = `${bundleFile}.${process.pid}.tmp`;
  fs.writeFileSync(partial, code);
  fs.renameSync(partial, bundleFile);
  return bundleFile;
}

/**
 * The build id a lifecycle worker declares when none is configured: named by the workflow
 * code it runs (the bundle), the only code a pinned run depends on. Two builds whose
 * workflow code differs never share an id; a build that changed only activities keeps
 * its id, so its runs need no drain.
 */
export function buildIdOf(bundle: WorkflowBundle): string {
  return `wf-${createHash('sha256').update(bundle.code).digest('hex').slice(0, 16)}`;
}
