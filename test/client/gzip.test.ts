/**
 * Result files served gzip-encoded (`Content-Encoding: gzip`): the client asks for gzip, decodes
 * it, and resumes a cut transfer over the encoded bytes.
 */
import { strict as assert } from 'node:assert';
import { after, before, describe, test } from 'node:test';
import { request } from 'undici';
import type { EmulatorHarness } from '../helpers/emulator.js';
import {
  APIS,
  clientFor,
  completed,
  logged,
  logLength,
  readAll,
  startEmulator,
} from './support.js';

/** The file as a client that does not accept gzip gets it. */
async function plain(url: string): Promise<Buffer> {
  const res = await request(url);
  assert.equal(res.statusCode, 200);
  assert.equal(res.headers['content-encoding'], undefined);
  return Buffer.from(await res.body.arrayBuffer());
}

describe('gzip-encoded result files', () => {
  let emu: EmulatorHarness;

  before(async () => {
    emu = await startEmulator('real', { gzipFiles: true });
  });
  after(async () => {
    await emu?.close();
  });

  for (const api of APIS) {
    test(`${api}: decoded bytes equal the plain file, also after a cut`, async () => {
      const client = clientFor(emu, api);
      try {
        const start = await client.startDownload({
          type: 'businesses',
          query: '*',
          numRecords: 150,
          format: 'csv',
        });
        const info = await completed(emu, client, start.id);
        const file = info.files[0]!;
        const expected = await plain(file.url);
        const encoded = await request(file.url, { headers: { 'accept-encoding': 'gzip' } });
        assert.equal(
          encoded.headers['content-encoding'],
          'gzip',
          'the emulator serves gzip to who asks',
        );
        const wireBytes = Buffer.from(await encoded.body.arrayBuffer());
        assert.ok(
          wireBytes.length < expected.length && wireBytes[0] === 0x1f && wireBytes[1] === 0x8b,
        );

        const from = await logLength(emu);
        const decoded = await readAll(await client.openResultFile(start.id, file));
        assert.ok(decoded.equals(expected), 'gunzipped');
        assert.match(decoded.toString('utf8'), /^id,/);

        await emu.faults([{ match: 'GET /files/', action: 'cut', after_bytes: 2000 }]);
        const resumed = await readAll(await client.openResultFile(start.id, file));
        assert.ok(resumed.equals(expected), 'gunzipped across the resume');
        const gets = await logged(emu, 'GET', `/files/${file.name}`, from);
        assert.deepEqual(
          gets.map((g) => g.status),
          [200, 0, 206],
        );
      } finally {
        await emu.clearFaults();
        await client.close();
      }
    });
  }
});
