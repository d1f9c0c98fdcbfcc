/**
 * Shared pieces of the client suite: emulators with small data, clients for either API version
 * with retries that do not wait, and helpers to wait for downloads and read streams.
 */
import { strict as assert } from 'node:assert';
import type { Readable } from 'node:stream';
import { type ClientOptions, createServiceClient } from '../../src/client/index.js';
import type { DownloadInfo, ServiceClient } from '../../src/client/types.js';
import type { EmulatorOptions, WireMode } from '../../src/emulator/index.js';
import { EmulatorHarness, type LoggedRequest } from '../helpers/emulator.js';

export const WIRES = ['live', 'contract', 'real'] as const;
export type Wire = WireMode;
export const APIS = ['v4', 'v3'] as const;
export type Api = (typeof APIS)[number];

/** Small data, fast downloads, and several result files per download (fileRecords). */
export function startEmulator(
  wire: Wire,
  options: Partial<EmulatorOptions> = {},
): Promise<EmulatorHarness> {
  return EmulatorHarness.start({
    wire,
    scale: 0.05,
    queueMs: 1000,
    rate: 500_000,
    fileRecords: 150,
    ...options,
  });
}

/** Retry sleeps that return at once, and a record of how long each would have been. */
export function instantSleep(): { sleeps: number[]; options: Pick<ClientOptions, 'sleep'> } {
  const sleeps: number[] = [];
  return {
    sleeps,
    options: {
      sleep: async (ms: number, signal?: AbortSignal) => {
        if (signal?.aborted) throw signal.reason;
        sleeps.push(ms);
      },
    },
  };
}

export function clientFor(
  emu: EmulatorHarness,
  api: Api,
  options: ClientOptions = {},
  credentials: { password?: string; token?: string } = {},
): ServiceClient {
  const { email, password, token } = emu.credentials;
  const settings =
    api === 'v4'
      ? { url: emu.v4Url, email, password: credentials.password ?? password }
      : { url: emu.v3Url, token: credentials.token ?? token };
  return createServiceClient(settings, { ...instantSleep().options, ...options });
}

/** Lets emulator time run until the download is completed, then returns it with its files. */
export async function completed(
  emu: EmulatorHarness,
  client: ServiceClient,
  id: string,
): Promise<DownloadInfo> {
  for (let i = 0; i < 50; i++) {
    const info = await client.getDownload(id);
    if (info.state === 'completed') return info;
    assert.ok(
      info.state === 'queued' || info.state === 'running',
      `download ${id} is ${info.state}`,
    );
    await emu.advanceClock(1000);
  }
  throw new Error(`download ${id} did not complete`);
}

export async function readAll(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream)
    chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk));
  return Buffer.concat(chunks);
}

/** The requests logged since `from` (an index into the log) that match method and path prefix. */
export async function logged(
  emu: EmulatorHarness,
  method: string,
  prefix: string,
  from = 0,
): Promise<LoggedRequest[]> {
  const all = await emu.requests();
  return all.slice(from).filter((r) => r.method === method && r.path.startsWith(prefix));
}

export async function logLength(emu: EmulatorHarness): Promise<number> {
  return (await emu.requests()).length;
}

/** A search query that matches records of every data type. */
