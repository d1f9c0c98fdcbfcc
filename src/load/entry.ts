import type { ColumnType, DestinationCapabilities, OpenDestinationOptions } from './destination.js';
import type { Dialect } from './dialect.js';

/**
 * A kind of destination sluice loads into: one folder of `src/load/` (its parts: see
 * `dialect.ts`) and one entry of the registry (`registry.ts`), as Kysely hands each dialect its
 * own typed config and dlt gives each destination its configuration and capabilities. The entry
 * says what the kind is (names, URLs, capabilities), what it reads (settings beside its URL in a
 * pipeline file, variables of the environment) into options of its own type `O`, and how to
 * connect; the registry opens every kind the same way (`openDestination`), putting the parts
 * under the shared loader. The entry is small and loads nothing heavy: the driver is imported
 * when a destination of the kind is connected to.
 */
export interface DestinationEntry<O extends object = object> {
  /** Its name in run summaries and the registry (`SLUICE_TEST_DESTINATIONS` names it too). */
  readonly name: string;
  /** As messages name it. */
  readonly displayName: string;
  /** How its URLs look, for messages (`scheme:PATH`). */
  readonly example: string;
  readonly capabilities: DestinationCapabilities;
  /** Whether a destination URL is one of this kind. */
  matches(url: string): boolean;
  /**
   * Prefixes of table names it keeps for itself (lower case), with why: a job's table may not
   * begin with one, whatever the pipeline's destination (`keeps names beginning xy_ for ...`).
   */
  readonly reservedPrefixes?: readonly (readonly [prefix: string, why: string])[];
  /**
   * One text per place its URLs (and settings) name (a file's absolute path; a server, a
   * database and a schema), so that two URLs of one place are known as one: pipeline files run
   * together check their tables against each other's there. Without it, the URL and the
   * settings are the place's text.
   */
  identity?(url: string, options: { baseDir?: string; settings: Settings }): string;
  /**
   * Settings of its own a pipeline file may give beside `url` (`destination: { url, NAME: ... }`):
   * what each is, and what is wrong with a value (undefined when it is right). Any other key is
   * refused.
   */
  readonly settings?: Readonly<Record<string, DestinationSetting>>;
  /**
   * Variables of the environment it reads (in its `options()`), with what each does; nothing
   * outside its folder reads them (test/unit/load/boundary.test.ts).
   */
  readonly environment?: Readonly<Record<string, string>>;
  /** Its own options, from its settings (already checked) and the environment. */
  options?(settings: Settings, env: NodeJS.ProcessEnv): O;
  /** Its capabilities under its own options, where they change them (else `capabilities`). */
  capabilitiesWith?(own: O): DestinationCapabilities;
  /**
   * Connects to the destination a URL of this kind names: the parts of its dialect, which the
   * registry puts under the shared loader with the entry's name and capabilities.
   */
  connect(url: string, options: OpenDestinationOptions, own: O): Promise<DialectParts>;
  /**
   * The types it declares for sluice's column types (`double precision` for `real`), as
   * `sluice fields PIPELINE` shows them. Without it, sluice's own names are shown.
   */
  typeNames?(): Promise<Readonly<Record<ColumnType, string>>>;
  /**
   * How a test gets a fresh target of this kind (a new file; a new schema dropped afterwards)
   * and reads it back as an analyst would: tests ask this, never which kind it is. Loaded only
   * by tests.
   */
  testTargets?(): Promise<TestTargets>;
}

/** A destination's settings beside its URL, as a pipeline file gives them. */
export type Settings = Readonly<Record<string, unknown>>;

export interface DestinationSetting {
  /** What it is, for messages: `schema of the tables (default public)`. */
  readonly describe: string;
  /** What is wrong with `value`, or undefined when it is right. */
  problem(value: unknown): string | undefined;
}

/** What a destination's folder connects (see `Dialect`); the registry adds the rest. */
// biome-ignore lint/suspicious/noExplicitAny: each kind has its own connection type
export type DialectParts = Omit<Dialect<any>, 'name' | 'displayName' | 'capabilities'>;

/** Fresh targets of one kind of destination, for tests (see `DestinationEntry.testTargets`). */
export interface TestTargets {
  /**
   * Why no target of this kind can be made here (its server does not answer), or undefined.
   * With `CI=true` it throws instead: there, a kind that cannot run is a failure.
   */
  skipReason(): Promise<string | undefined>;
  /**
   * One process at a time has the database open: a second run waits at the open (`--wait`) or
   * fails with SLUICE_LOCKED, and so can never take a lost lock over.
   */
  readonly oneProcess: boolean;
  /** The database itself refuses a value sluice's checks let through (a bad timestamp). */
  readonly refusesValues: boolean;
  /** A table may hold columns whose names differ only in case (made by an earlier sluice). */
  readonly caseTwins: boolean;
  /** The type it declares for sluice's column types, as `columns` reports them (lower case). */
  readonly declared: Readonly<
    Record<'integer' | 'real' | 'boolean' | 'timestamp' | 'json' | 'text', string>
  >;
  /** A new, empty target under `dir` (files) or of its own (a schema), named after `name`. */
  fresh(dir: string, name: string): Promise<TestTarget>;
}

/** One test's place of a destination kind, and a connection of the test's own to it. */
export interface TestTarget {
  /** The URL that opens it. */
  readonly url: string;
  /** Its settings beside the URL (`openDestination(url, { settings })`). */
  readonly settings: Readonly<Record<string, string>>;
  /** The same, as the `destination:` value of a pipeline file. */
  readonly destinationYaml: string;
  /** The database file, for a destination in one file. */
  readonly file?: string;
  /** Rows of a query, numbers as numbers, over a connection of the test's own. */
  all<T = Record<string, unknown>>(sql: string): Promise<T[]>;
  /** Runs statements over a writable connection of the test's own. */
  exec(...statements: string[]): Promise<void>;
  /** A table's columns and their declared types (lower case), in order. */
  columns(table: string): Promise<{ name: string; type: string }[]>;
  /** The names of a table's indexes (those made by a statement), sorted. */
  indexes(table: string): Promise<string[]>;
  /** Names of the tables beginning with `prefix`, sorted. */
  tables(prefix: string): Promise<string[]>;
  /**
   * Takes the lock `name` away from the handle holding it, as the world can (a lock file
   * deleted, a session ended by an administrator); the holder lives on, not knowing.
   */
  breakLock(name: string): Promise<void>;
  /**
   * A session of the test's own that stays open between statements, where another session's
   * transaction can hold a table while the destination works (for a database with sessions).
   */
  session?(): Promise<{ query(sql: string): Promise<unknown>; end(): Promise<void> }>;
  /** The URL with these session settings, for a database that takes them in its URL. */
  urlWithSettings?(settings: string): string;
  /** Removes what the target left (a schema); files are left to the test's folder. */
  dispose(): Promise<void>;
}
