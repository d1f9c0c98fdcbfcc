import { FIELDS, type FieldMap } from '../catalog.js';
import { type DecodedRecord, jsonRow, type RecordShape } from '../records/index.js';
import { childTableName, parentColumn, splitRecord, tableHints } from '../records/nested.js';
import type { Row } from '../records/types.js';
import type { JobSpec } from './spec.js';

/**
 * The tables one job writes, and how a record of its download is split among them:
 * the job's table, child tables (`nested: tables`), and for autotrace and owner enrichment the
 * people table (one row per people key) and the link table `<table>__owners`.
 */
export interface RelatedTable {
  name: string;
  /** Merge key (people table), or empty: rows are appended after the delete below. */
  key: string[];
  /**
   * Rows of this table belonging to a re-loaded parent are deleted first: `column` holds the
   * parent's key, read from `parentKey` of the rows of `parentTable`.
   */
  replaceBy?: { column: string; parentTable: string; parentKey: string };
  /** Built aside and swapped in with the job's table (`write: replace`). */
  staged: boolean;
  /**
   * Deleted-and-reloaded only when the job merges (child tables); always for people and links.
   * People tables are shared by jobs and runs, so even `replace` merges into them.
   */
  onlyWhenMerging: boolean;
  hints: FieldMap;
}

export const PEOPLE_KEY = 'people_key';

/** The person fields kept in the people table, the same from autotrace and from enrichment. */
const PERSON_FIELDS = ['firstName', 'lastName', 'emails', 'phoneNumbers', 'keys'] as const;

export function ownersTableName(propertiesTable: string): string {
  return `${propertiesTable}__owners`;
}

export function peopleTableOf(job: JobSpec): string {
  return job.people_table ?? 'people';
}

export interface Enrichment {
  /** People key -> keys of the properties it owns. */
  owners: Map<string, (string | number)[]>;
  /** The properties job's table and key column, for the link table. */
  propertiesTable: string;
  propertyKey: string;
}

export class JobTables {
  readonly main: string;
  readonly #related = new Map<string, RelatedTable>();
  readonly shape: RecordShape;
  readonly #mainHints: FieldMap;

  constructor(
    readonly job: JobSpec,
    readonly enrichment?: Enrichment,
  ) {
    this.main = job.table;
    const nested = job.nested === 'tables';
    const parentKey = job.key[0]!;
    if (nested) {
      const hints = tableHints(job.type, job.table);
      this.#mainHints = hints.get(job.table) ?? {};
      for (const [name, fields] of hints) {
        if (name === job.table) continue;
        this.#add({
          name,
          key: [],
          replaceBy: { column: parentColumn(parentKey), parentTable: job.table, parentKey },
          staged: true,
          onlyWhenMerging: true,
          hints: fields,
        });
      }
    } else {
      this.#mainHints = FIELDS[job.type];
    }

    const peopleTable = enrichment ? job.table : peopleTableOf(job);
    const personFields = FIELDS.people;
    const phoneTable = childTableName(peopleTable, 'phoneNumbers');
    const addPeopleTables = () => {
      if (!enrichment) {
        this.#add({
          name: peopleTable,
          key: [PEOPLE_KEY],
          staged: false,
          onlyWhenMerging: false,
          hints: personFields,
        });
      }
      if (nested) {
        const phoneDef = personFields.phoneNumbers;
        this.#add({
          name: phoneTable,
          key: [],
          replaceBy: {
            column: parentColumn(PEOPLE_KEY),
            parentTable: peopleTable,
            parentKey: PEOPLE_KEY,
          },
          staged: false,
          onlyWhenMerging: false,
          hints: phoneDef?.kind === 'objects' ? phoneDef.fields : {},
        });
      }
    };
    const linkTable = ownersTableName(enrichment ? enrichment.propertiesTable : job.table);
    const propertyColumn = `property_${enrichment ? enrichment.propertyKey : parentKey}`;
    const addLinkTable = (parentTable: string, parentKeyColumn: string) =>
      this.#add({
        name: linkTable,
        key: [],
        replaceBy: { column: propertyColumn, parentTable, parentKey: parentKeyColumn },
        // An autotrace job's links describe its own table's rows: `replace` swaps them in with
        // it. An enrichment job merges into the links of another job's table.
        staged: enrichment === undefined,
        onlyWhenMerging: false,
        hints: { title: { kind: 'string' } },
      });

    const person = (source: Record<string, unknown>, key: string) => {
      const record: DecodedRecord = { [PEOPLE_KEY]: key };
      for (const field of PERSON_FIELDS) record[field] = source[field] ?? null;
      return nested
        ? splitRecord(record, peopleTable, [PEOPLE_KEY])
        : { row: jsonRow(record), children: new Map() };
    };

    const base: (record: DecodedRecord) => { row: Row; related?: Map<string, Row[]> } = nested
      ? (record) => {
          const { row, children } = splitRecord(record, job.table, job.key);
          return { row, related: children };
        }
      : (record) => ({ row: jsonRow(record) });

    if (enrichment) {
      // A people record found by an owner's people key: the person, and links to the properties.
      addPeopleTables();
      // Links of a property are replaced when its owner is loaded again: keyed by the property.
      addLinkTable(linkTable, propertyColumn);
      this.shape = (record) => {
        const keys = Array.isArray(record.keys) ? (record.keys as unknown[]) : [];
        const key = keys.find(
          (k): k is string => typeof k === 'string' && enrichment.owners.has(k),
        );
        if (key === undefined) return base(record);
        const { row, children } = person(record, key);
        const related = new Map(children);
        related.set(
          linkTable,
          (enrichment.owners.get(key) ?? []).map((p) => ({
            [propertyColumn]: p,
            [PEOPLE_KEY]: key,
            title: 'owner',
          })),
        );
        return { row, related };
      };
    } else if (job.auto_trace) {
      addPeopleTables();
      addLinkTable(job.table, parentKey);
      this.shape = (record) => {
        const shaped = base(record);
        const related = shaped.related ?? new Map<string, Row[]>();
        const people: Row[] = [];
        const links: Row[] = [];
        const entries = Array.isArray(record.people)
          ? (record.people as Record<string, unknown>[])
          : [];
        for (const entry of entries) {
          const keys = entry?.people_keys;
          const key = Array.isArray(keys)
            ? keys.find((k): k is string => typeof k === 'string')
            : undefined;
          if (key === undefined) continue;
          const { row, children } = person(entry, key);
          people.push(row);
          for (const [table, rows] of children)
            related.set(table, [...(related.get(table) ?? []), ...rows]);
          links.push({
            [propertyColumn]: shaped.row[parentKey] ?? null,
            [PEOPLE_KEY]: key,
            title: (entry.title as string) ?? null,
          });
        }
        related.set(peopleTable, people);
        related.set(linkTable, links);
        return { row: shaped.row, related };
      };
    } else {
      this.shape = base;
    }
  }

  #add(table: RelatedTable): void {
    this.#related.set(table.name, table);
  }

  /** The table a related name stands for, adding child tables the catalogue did not list. */
  related(name: string): RelatedTable {
    let table = this.#related.get(name);
    if (table === undefined) {
      const parentKey = this.job.key[0]!;
      table = {
        name,
        key: [],
        replaceBy: { column: parentColumn(parentKey), parentTable: this.main, parentKey },
        staged: true,
        onlyWhenMerging: true,
        hints: {},
      };
      this.#related.set(name, table);
    }
    return table;
  }

  relatedTables(): RelatedTable[] {
    return [...this.#related.values()];
  }

  hintsOf(name: string): FieldMap {
    return name === this.main ? this.#mainHints : (this.#related.get(name)?.hints ?? {});
  }

  /** Every table name the job writes, for its summary. */
  names(): string[] {
    return [this.main, ...this.#related.keys()];
  }
}
