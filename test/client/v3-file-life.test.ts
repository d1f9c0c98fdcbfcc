/**
 * v3 result files live seven days after their `date_created` (the vendor's results reference);
 * the storage answers 403 after that, and reading the results again gives the same dead links.
 * Within the seven days an expired link is refreshed as ever; past them the client says that a
 * new download is needed (SLUICE_DOWNLOAD_EXPIRED, exit 2) instead of "run again", which could
 * never help. The client's clock moves with the emulator's here (the transport's `now`).
 */
import { strict as assert } from 'node:assert';
import { after, before, describe, test } from 'node:test';
import { createServiceClient } from '../../src/client/index.js';
import { exitCodeOf } from '../../src/error-codes.js';
import { SluiceError } from '../../src/errors.js';
import { EmulatorHarness } from '../helpers/emulator.js';
import { completed, instantSleep, readAll } from './support.js';

const DAY = 24 * 60 * 60 * 1000;

let emu: EmulatorHarness;
let offset = 0;

before(async () => {
  emu = await EmulatorHarness.start({ scale: 0.05, fileRecords: 50 });
});
after(() => emu.close());

/** Moves the emulator's clock and the client's together. */
async function advance(ms: number): Promise<void> {
  offset += ms;
  await emu.advanceClock(ms);
}

describe('v3 result files and their seven days', () => {
  test('an expired link within the seven days is refreshed; past them, a new download is needed', async () => {
    const client = createServiceClient(
      { url: emu.v3Url, token: emu.credentials.token },
      { ...instantSleep().options, now: () => Date.now() + offset },
    );
    try {
      const start = await client.startDownload({ type: 'products', query: '*', numRecords: 20 });
      const info = await completed(emu, client, start.id);
      const file = info.files[0]!;
      const life = Date.parse(file.expiresAt!) - (Date.now() + offset);
      assert.ok(life > 7 * DAY - 60_000 && life <= 7 * DAY, `expires in ${life} ms`);

      // Within the seven days: the link expires, the results give a fresh one.
      await emu.expireFiles();
      assert.ok((await readAll(await client.openResultFile(start.id, file))).length > 0);

      await advance(8 * DAY);
      await assert.rejects(client.openResultFile(start.id, file), (e: unknown) => {
        assert.ok(e instanceof SluiceError, String(e));
        assert.equal(e.code, 'SLUICE_DOWNLOAD_EXPIRED');
        assert.equal(exitCodeOf(e.code), 2);
        assert.match(e.message, new RegExp(`result file ${file.name} of download ${start.id}`));
        assert.match(e.message, /start a new download instead \(sluice run --fresh/);
        return true;
      });
    } finally {
      await client.close();
    }
  });
});
