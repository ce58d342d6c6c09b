import { setWorkflowOptions } from '@temporalio/workflow';
import { iacRun } from './iac-run';
import { sandboxLifecycle } from './sandbox-lifecycle';

export { cleanupHostSweep, cleanupSweep } from './cleanup-sweep';
export { hostMemoryReport } from './host-memory-report';
export { iacRun } from './iac-run';
export { iacTargetTurns } from './iac-target-turns';
export { roundTrip } from './round-trip';
export { sandboxLifecycle } from './sandbox-lifecycle';
export { storeCommand } from './store-command';
export { warmPoolReport } from './warm-pool-report';
export { webhookDelivery } from './webhook-delivery';

// A sandbox's lifecycle and an IaC run (which may wait hours for a reviewer) finish on
// the build that started them (DESIGN §16): a new build needs no patch branches for
// them. Every other workflow follows the current build (the worker's default,
// AUTO_UPGRADE): they are short, or (a target's turns) small and kept replay-safe, so
// a rollout never waits for them to end.
setWorkflowOptions({ versioningBehavior: 'PINNED' }, sandboxLifecycle);
setWorkflowOptions({ versioningBehavior: 'PINNED' }, iacRun);
