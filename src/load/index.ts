export type * from './destination.js';
export { DestinationError } from './errors.js';
export {
  destinationEntryOf,
  destinationExamples,
  destinations,
  openDestination,
  registerDestination,
} from './registry.js';
