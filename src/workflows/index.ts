export { cleanupSweep } from './cleanup-sweep';
export { roundTrip } from './round-trip';
export { sandboxLifecycle } from './sandbox-lifecycle';
