import { UsageError } from '../errors.js';
import type { Destination, DestinationEntry, OpenDestinationOptions } from './destination.js';
import { duckdb } from './duckdb/index.js';
import { postgres } from './postgres/index.js';
import { sqlite } from './sqlite/index.js';

/**
 * The destinations sluice loads into, one entry each. A new destination is a folder of
 * `src/load/` with the parts `dialect.ts` lists, and one line here; nothing else in `src/` names
 * a destination: URLs are told apart, opened and described through these entries.
 */
const DESTINATIONS: DestinationEntry[] = [sqlite, postgres, duckdb];

/**
 * Adds a destination to the registry (a plugin of a library user's, or a test's), or replaces
 * the one of the same name.
 */
export function registerDestination(entry: DestinationEntry): void {
  const at = DESTINATIONS.findIndex((d) => d.name === entry.name);
  if (at >= 0) DESTINATIONS[at] = entry;
  else DESTINATIONS.push(entry);
}

export function destinations(): readonly DestinationEntry[] {
  return DESTINATIONS;
}

/** The kind of destination a URL names, or undefined when none takes it. */
export function destinationEntryOf(url: string): DestinationEntry | undefined {
  return DESTINATIONS.find((d) => d.matches(url));
}

/** How destination URLs look, for messages: `sqlite:PATH or postgres://...`. */
export function destinationExamples(): string {
  return DESTINATIONS.map((d) => d.example).join(', or ');
}

/** Opens a destination from its URL, through the entry of its kind. */
export async function openDestination(
  url: string,
  options: OpenDestinationOptions = {},
): Promise<Destination> {
  const entry = destinationEntryOf(url);
  if (entry === undefined) {
    throw new UsageError(`destination '${url}' is not understood: use ${destinationExamples()}`);
  }
  return entry.open(url, options);
}
