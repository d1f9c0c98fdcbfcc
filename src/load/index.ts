export type * from './destination.js';
export { DestinationError } from './errors.js';
export { openDestination } from './open-destination.js';
