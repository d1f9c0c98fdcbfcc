import { UsageError } from '../errors.js';
import type { Destination, OpenDestinationOptions } from './destination.js';
import { duckdb } from './duckdb/index.js';
import type { DestinationEntry, Settings } from './entry.js';
import { postgres } from './postgres/index.js';
import { sqlite } from './sqlite/index.js';

/**
 * The destinations sluice loads into, one entry each. A new destination is a folder of
 * `src/load/` with the parts `dialect.ts` lists, and one line here; nothing else in `src/` names
 * a destination: URLs are told apart, checked, opened and described through these entries.
 */
const DESTINATIONS: DestinationEntry[] = [sqlite, postgres, duckdb];

/** Where a pipeline's data goes when its file says nothing: a file of the first kind. */
export function defaultDestination(name: string): string {
  return `sqlite:data/${name}.sqlite`;
}

/**
 * Adds a destination to the registry (a plugin of a library user's, or a test's), or replaces
 * the one of the same name.
 */
// biome-ignore lint/suspicious/noExplicitAny: an entry's own options are its own business
export function registerDestination(entry: DestinationEntry<any>): void {
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

/**
 * What is wrong with a destination's settings beside its URL, each as the setting's name and
 * why (none when they are right). A setting is checked by the kind that declares it, whatever
 * the URL's kind: `SLUICE_DESTINATION` may send a pipeline to another kind, which leaves the
 * settings it does not take aside.
 */
export function settingProblems(settings: Settings): { setting: string; problem: string }[] {
  return Object.entries(settings).flatMap(([setting, value]) => {
    const declared = DESTINATIONS.map((d) => d.settings?.[setting]).find(Boolean);
    if (declared === undefined) {
      const known = DESTINATIONS.flatMap((d) => Object.keys(d.settings ?? {}));
      return [{ setting, problem: `no destination takes it (settings: ${known.join(', ')})` }];
    }
    const problem = value === undefined ? undefined : declared.problem(value);
    return problem === undefined ? [] : [{ setting, problem }];
  });
}

/**
 * Opens a destination from its URL, every kind the same way: its entry reads its own options
 * (settings, environment), connects, and the parts go under the shared loader.
 */
export async function openDestination(
  url: string,
  options: OpenDestinationOptions = {},
): Promise<Destination> {
  const entry = destinationEntryOf(url);
  if (entry === undefined) {
    throw new UsageError(`destination '${url}' is not understood: use ${destinationExamples()}`);
  }
  const settings = options.settings ?? {};
  const [wrong] = settingProblems(settings);
  if (wrong !== undefined) throw new UsageError(`destination ${wrong.setting}: ${wrong.problem}`);
  const own = entry.options?.(settings, options.env ?? process.env) ?? {};
  const [parts, { Loader }] = await Promise.all([
    entry.connect(url, options, own),
    import('./loader.js'),
  ]);
  return new Loader(
    {
      name: entry.name,
      displayName: entry.displayName,
      capabilities: entry.capabilitiesWith?.(own) ?? entry.capabilities,
      ...parts,
    },
    options.naming,
  );
}
