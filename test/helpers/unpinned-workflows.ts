/**
 * The plane's workflows without their versioning behaviour: what a lifecycle worker of a
 * release before Worker Versioning ran (Temporal refuses a behaviour from a worker
 * without a build). Bundled by tests that play such a release.
 */
export { cleanupHostSweep, cleanupSweep } from '../../src/workflows/cleanup-sweep';
export { roundTrip } from '../../src/workflows/round-trip';
export { sandboxLifecycle } from '../../src/workflows/sandbox-lifecycle';
export { storeCommand } from '../../src/workflows/store-command';
export { warmPoolReport } from '../../src/workflows/warm-pool-report';
