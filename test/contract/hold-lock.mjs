// Holds a destination's lock until killed: `node hold-lock.mjs URL NAME [SETTINGS] [PLUGIN]`
// (SETTINGS: the destination's settings as JSON). It runs the built destination (dist/), as a
// second sluice process would; with PLUGIN (run under tsx), the sources, with the destination
// the module PLUGIN exports registered as the tests register it.
const [url, name, settings, plugin] = process.argv.slice(2);
const load = plugin
  ? await import('../../src/load/index.ts')
  : await import('../../dist/load/index.js');
if (plugin)
  for (const entry of Object.values(await import(plugin))) load.registerDestination(entry);
const dest = await load.openDestination(url, settings ? { settings: JSON.parse(settings) } : {});
await dest.lock(name, { wait: false });
process.stdout.write('locked\n');
setInterval(() => {}, 60_000);
