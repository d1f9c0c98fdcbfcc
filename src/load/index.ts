export type * from './destination.js';
export { type OpenDestinationOptions, openDestination, sqlitePath } from './open-destination.js';
export { quoteIdent } from './schema.js';
export { openSqliteDestination } from './sqlite/sqlite-destination.js';
