export { roundTrip } from './round-trip';
