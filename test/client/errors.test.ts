/**
 * What the client says when things go wrong: the service's own message from every error body
 * shape, and never a password, token or URL signature.
 */

import { strict as assert } from 'node:assert';
import { createServer } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { inspect } from 'node:util';
import { createServiceClient } from '../../src/client/index.js';
import { WIRE_FORMS } from '../../src/emulator/wire.js';
import { ApiError, NetworkError, SluiceError } from '../../src/errors.js';
import type { EmulatorHarness } from '../helpers/emulator.js';
import { clientFor, completed, startEmulator, WIRES } from './support.js';

/** Every way an error can be shown: message, string, inspection (stack, cause, body). */
function shown(error: unknown): string {
  return [
    String(error),
    (error as Error).message,
    (error as Error).stack,
    inspect(error, { depth: 6 }),
  ].join('\n');
}

function assertHides(error: unknown, secrets: string[]): void {
  const text = shown(error);
  for (const secret of secrets) assert.ok(!text.includes(secret), `error shows a secret: ${text}`);
}

async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

for (const wire of WIRES) {
  describe(`client errors, ${wire} wire`, () => {
    let emu: EmulatorHarness;

    before(async () => {
      emu = await startEmulator(wire);
    });
    after(async () => {
      await emu?.close();
    });

    test('v4: a 400 carries the service message in either body shape', async () => {
      const client = clientFor(emu, 'v4');
      try {
        await assert.rejects(
          client.preview({ type: 'properties', query: '*', numRecords: 1, view: 'no such view' }),
          (e: unknown) => {
            assert.ok(e instanceof ApiError);
            assert.equal(e.status, 400);
            assert.equal(e.retryable, false);
            assert.equal(e.code, 'SLUICE_API_400');
            assert.equal(e.path, '/v4/properties/search');
            assert.ok(
              e.details.some((d) => d.includes('view does not exist: no such view')),
              e.details.join('|'),
            );
            assert.match(e.message, /view does not exist: no such view/);
            if (WIRE_FORMS[wire].errorsList)
              assert.ok(Array.isArray((e.body as { errors?: unknown }).errors));
            else assert.equal((e.body as { code?: unknown }).code, 400);
            return true;
          },
        );
        // A field-level detail (the autotrace view rule) reaches the message too.
        await client.createView({ name: 'no keys', fields: ['id', 'address'] });
        await assert.rejects(
          client.preview({
            type: 'properties',
            query: '*',
            numRecords: 1,
            view: 'no keys',
            autoTrace: true,
          }),
          (e: unknown) => e instanceof ApiError && /people\.people_keys/.test(e.message),
        );
        await assert.rejects(client.getDownload('nope'), (e: unknown) => {
          return (
            e instanceof ApiError && e.status === 404 && /download 'nope' not found/.test(e.message)
          );
        });
      } finally {
        await client.close();
      }
    });

    test('v4: a service error is said once (an unknown view field printed its message twice, once more in details)', async () => {
      await emu.reset();
      const client = clientFor(emu, 'v4');
      /** What the client says of a failure: each of the service's messages, once. */
      const said = async (call: Promise<unknown>, status: number, first: RegExp) => {
        let caught: unknown;
        await call.catch((e: unknown) => {
          caught = e;
        });
        assert.ok(caught instanceof ApiError, String(caught));
        assert.equal(caught.status, status, caught.message);
        assert.equal(caught.details.length, 1, caught.details.join(' | '));
        assert.match(caught.details[0]!, first);
        return caught.details[0]!;
      };
      try {
        await said(
          client.createView({ name: 'x', fields: ['id', 'prise'] }),
          400,
          /^unknown field in view: prise$/,
        );
        await said(
          client.createView({ name: 'x', fields: ['id', 'prise', 'colour'] }),
          400,
          /^unknown fields in view: prise, colour$/,
        );
        await said(
          client.preview({ type: 'properties', query: '*', numRecords: 1, view: 'nosuch' }),
          400,
          /view does not exist: nosuch/,
        );
        await client.createView({ name: 'mine', fields: ['id', 'address'] });
        await said(
          client.createView({ name: 'mine', fields: ['id'] }),
          409,
          /a view named 'mine' already exists/,
        );
        await said(
          client.preview({
            type: 'properties',
            query: '*',
            numRecords: 1,
            view: 'mine',
            autoTrace: true,
          }),
          400,
          /cannot be used with auto_trace: include people\.people_keys:\* in the view/,
        );
        await emu.setCredits({ people_credits_allotted: 0 });
        await said(
          client.preview({ type: 'properties', query: '*', numRecords: 1, autoTrace: true }),
          403,
          /auto_trace requires both a people data plan and a property data plan/,
        );
      } finally {
        await client.close();
        await emu.reset();
      }
    });

    test('v3: {error} and {error, message, code} bodies', async () => {
      const client = clientFor(emu, 'v3');
      try {
        await assert.rejects(
          client.preview({ type: 'businesses', query: '*', numRecords: 1, view: 'missing_view' }),
          (e: unknown) => {
            assert.ok(e instanceof ApiError);
            assert.equal(e.status, 400);
            assert.deepEqual(Object.keys(e.body as object), ['error']);
            assert.deepEqual(e.details, ['view does not exist: missing_view']);
            return true;
          },
        );
        await assert.rejects(client.getDownload('999999'), (e: unknown) => {
          return (
            e instanceof ApiError && e.status === 404 && e.details[0] === 'request 999999 not found'
          );
        });
      } finally {
        await client.close();
      }
    });

    test('v4: a wrong password fails with 401 and the password is nowhere in the error', async () => {
      const password = 'wrong-Secret-Passw0rd';
      const client = clientFor(emu, 'v4', {}, { password });
      try {
        await assert.rejects(client.account(), (e: unknown) => {
          assert.ok(e instanceof ApiError);
          assert.equal(e.status, 401);
          assert.match(e.message, /Invalid email or password/);
          assertHides(e, [password, emu.credentials.password]);
          return true;
        });
      } finally {
        await client.close();
      }
    });

    test('v3: a wrong token fails with 401 and the token is nowhere in the error', async () => {
      const token = 'not-the-Token-123';
      const client = clientFor(emu, 'v3', {}, { token });
      try {
        await assert.rejects(client.count({ type: 'products', query: '*' }), (e: unknown) => {
          assert.ok(e instanceof ApiError);
          assert.equal(e.status, 401);
          assertHides(e, [token, Buffer.from(`${token}:`).toString('base64')]);
          return true;
        });
      } finally {
        await client.close();
      }
    });

    test('credentials written into the URL are used and kept out of baseUrl and errors', async () => {
      const { token } = emu.credentials;
      const url = emu.v3Url.replace('http://', `http://${token}:@`);
      const client = createServiceClient({ url }, { maxAttempts: 1 });
      try {
        assert.equal(client.baseUrl, emu.v3Url);
        assert.ok((await client.count({ type: 'products', query: '*' })).numFound > 0);
        await assert.rejects(client.getDownload('424242'), (e: unknown) => {
          assertHides(e, [token]);
          return e instanceof ApiError;
        });
      } finally {
        await client.close();
      }
    });

    test('an expired file URL that cannot be refreshed: the signature stays out of the error', async () => {
      const client = clientFor(emu, 'v4', { maxFileRefreshes: 0 });
      try {
        const start = await client.startDownload({ type: 'products', query: '*', numRecords: 20 });
        const info = await completed(emu, client, start.id);
        const file = info.files[0]!;
        await emu.expireFiles();
        const signature = new URL(file.url).searchParams.get('X-Signature')!;
        assert.ok(signature.length > 20);
        await assert.rejects(client.openResultFile(start.id, file), (e: unknown) => {
          // Expired again and again is worth a retry later, with the service's 403 as the cause.
          assert.ok(e instanceof SluiceError);
          assert.equal(e.code, 'SLUICE_FILE_EXPIRED');
          assert.equal(e.retryable, true);
          const cause = e.cause;
          assert.ok(cause instanceof ApiError);
          assert.equal(cause.status, 403);
          assert.match(e.message, /expired/);
          assert.equal(cause.path, `/files/${file.name}`);
          assertHides(e, [signature, 'X-Signature', emu.credentials.password]);
          assertHides(cause, [signature, 'X-Signature', emu.credentials.password]);
          return true;
        });
      } finally {
        await client.close();
      }
    });
  });
}

describe('client errors without a service', () => {
  test('an unreachable service is a retryable NetworkError without secrets', async () => {
    const port = await closedPort();
    const password = 'P4ssword-for-nowhere';
    let retries = 0;
    const client = createServiceClient(
      { url: `http://127.0.0.1:${port}/v4`, email: 'someone@example.com', password },
      { maxAttempts: 3, sleep: async () => {}, onRetry: () => retries++ },
    );
    try {
      await assert.rejects(client.account(), (e: unknown) => {
        assert.ok(e instanceof NetworkError, String(e));
        assert.equal(e.retryable, true);
        assert.match(e.message, /could not connect/);
        assertHides(e, [password]);
        return true;
      });
      assert.equal(retries, 2);
    } finally {
      await client.close();
    }
  });
});
