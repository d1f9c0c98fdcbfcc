export type * from './destination.js';
export type * from './entry.js';
export { DestinationError } from './errors.js';
export {
  defaultDestination,
  destinationEntryOf,
  destinationExamples,
  destinations,
  openDestination,
  registerDestination,
  settingProblems,
} from './registry.js';
