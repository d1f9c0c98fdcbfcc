/**
 * The layer rules of sluice, checked by `npm run check` (depcruise). Lower layers never import
 * higher ones:
 *
 *   errors, catalog, util, log, query     the base: imports nothing of sluice above it
 *   schema                                column types, inference, naming, change plans
 *   client                                the service
 *   records                               result files to rows (no database, no pipeline)
 *   load                                  the sealed destination: the only SQL and drivers
 *   pipeline                              the run's stages and the run loop
 *   ui                                    the dashboard (`sluice ui`, `sluice report`): read-only
 *   cli, index                            the command line and the public API
 *
 * The emulator stands beside them: it may use the base and the records' CSV writer, never the
 * pipeline, the destinations or the CLI.
 */
const layer = (name, path) => ({ name, path });
const BASE = '^src/(errors|error-codes|catalog|log)\\.ts$|^src/(util|query)/';
const layers = [
  layer('base', BASE),
  layer('schema', '^src/schema/'),
  layer('client', '^src/client/'),
  layer('records', '^src/records/'),
  layer('load', '^src/load/'),
  layer('pipeline', '^src/pipeline/'),
  layer('ui', '^src/ui/'),
];
const HIGHER = {
  base: '^src/(schema|client|records|load|pipeline|ui|cli|emulator)/|^src/index\\.ts$',
  schema: '^src/(client|records|load|pipeline|ui|cli|emulator)/|^src/index\\.ts$',
  client: '^src/(schema|records|load|pipeline|ui|cli|emulator)/|^src/index\\.ts$',
  records: '^src/(client|load|pipeline|ui|cli|emulator)/|^src/index\\.ts$',
  load: '^src/(client|pipeline|ui|cli|emulator)/|^src/index\\.ts$',
  pipeline: '^src/(ui|cli|emulator)/|^src/index\\.ts$',
  ui: '^src/(cli|emulator)/|^src/index\\.ts$',
};

module.exports = {
  forbidden: [
    ...layers.map(({ name, path }) => ({
      name: `layer-${name}`,
      severity: 'error',
      comment: `${name} is a lower layer: it must not import a higher one`,
      from: { path },
      to: { path: HIGHER[name] },
    })),
    {
      name: 'sealed-destination',
      severity: 'error',
      comment: 'Only src/load/ touches SQL drivers and Kysely: the destination is sealed',
      from: { path: '^src/', pathNot: '^src/load/' },
      to: { path: 'node_modules/(kysely|pg|pg-copy-streams|better-sqlite3|@duckdb/node-api)/' },
    },
    {
      name: 'emulator-stands-beside',
      severity: 'error',
      comment: 'The emulator is a stand-in for the service: it knows nothing of runs or databases',
      from: { path: '^src/emulator/' },
      to: { path: '^src/(pipeline|load|ui|cli)/|^src/index\\.ts$' },
    },
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'Modules that import each other cannot be understood or tested apart',
      from: { path: '^src/' },
      to: { circular: true },
    },
    {
      name: 'not-to-unresolvable',
      severity: 'error',
      from: { path: '^src/' },
      to: { couldNotResolve: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
    },
  },
};
