export { roundTrip } from './round-trip';
export { sandboxLifecycle } from './sandbox-lifecycle';
