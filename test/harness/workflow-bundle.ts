import { bundleWorkflowCode, type WorkflowBundle } from '@temporalio/worker';
import { workflowBundleOptions } from '../../src/worker/workflow-code';

let bundle: Promise<WorkflowBundle> | undefined;

/** Bundles src/workflows once per test process; each worker in the file reuses it. */
export function testWorkflowBundle(): Promise<WorkflowBundle> {
  bundle ??= bundleWorkflowCode({ ...workflowBundleOptions(), logger: silentLogger });
  return bundle;
}

const noop = () => undefined;
const silentLogger = { log: noop, trace: noop, debug: noop, info: noop, warn: noop, error: noop };
