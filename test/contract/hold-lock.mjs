// Holds a destination's lock until killed: `node hold-lock.mjs URL NAME [SCHEMA]`. It runs the
// built destination (dist/), as a second sluice process would.
import { openDestination } from '../../dist/load/index.js';

const [url, name, schema] = process.argv.slice(2);
const dest = await openDestination(url, schema ? { schema } : {});
await dest.lock(name, { wait: false });
process.stdout.write('locked\n');
setInterval(() => {}, 60_000);
