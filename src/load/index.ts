export type * from './destination.js';
export { DestinationError } from './errors.js';
export { type OpenDestinationOptions, openDestination, sqlitePath } from './open-destination.js';
