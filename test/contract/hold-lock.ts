// Holds a destination's lock until killed: `node --import tsx hold-lock.ts URL NAME [SCHEMA]`.
import { openDestination } from '../../src/load/index.js';

const [url, name, schema] = process.argv.slice(2);
const dest = await openDestination(url!, schema ? { schema } : {});
await dest.lock(name!, { wait: false });
process.stdout.write('locked\n');
setInterval(() => {}, 60_000);
