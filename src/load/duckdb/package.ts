/**
 * The `@duckdb/node-api` sluice is tested with, named exactly wherever sluice says how to install
 * it (its error without the package, the README, docs/design.md; test/unit/duckdb-package.test.ts
 * holds them to this). Every version the package publishes is a prerelease (`1.5.6-r.1`), which
 * a range such as `@1.5` never matches (npm: ETARGET), so the command names the version itself.
 */
export const DUCKDB_NODE_API_VERSION = '1.5.6-r.1';

/**
 * The command that installs it, spelt out as users read it (so that a search of the source finds a
 * command that resolves); the unit test holds it to `DUCKDB_NODE_API_VERSION`.
 */
export const DUCKDB_INSTALL = 'npm install @duckdb/node-api@1.5.6-r.1';
