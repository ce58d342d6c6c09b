import { setWorkflowOptions } from '@temporalio/workflow';
import { sandboxLifecycle } from './sandbox-lifecycle';

export { cleanupHostSweep, cleanupSweep } from './cleanup-sweep';
export { roundTrip } from './round-trip';
export { sandboxLifecycle } from './sandbox-lifecycle';
export { storeCommand } from './store-command';
export { warmPoolReport } from './warm-pool-report';

// A sandbox's lifecycle finishes on the build that started it (DESIGN §16): a new build
// needs no patch branches for it. Every other workflow is short and follows the
// current build (the worker's default, AUTO_UPGRADE).
setWorkflowOptions({ versioningBehavior: 'PINNED' }, sandboxLifecycle);
