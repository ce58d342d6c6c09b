export { cleanupHostSweep, cleanupSweep } from './cleanup-sweep';
export { roundTrip } from './round-trip';
export { sandboxLifecycle } from './sandbox-lifecycle';
export { storeCommand } from './store-command';
export { warmPoolReport } from './warm-pool-report';
