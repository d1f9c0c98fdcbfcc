import { CORE_FIELDS, type DataType, FIELDS, type FieldDef, type FieldMap } from '../catalog.js';
import { childTableName, parentColumn } from '../schema/naming.js';
import { META_COLUMNS, type TableDef } from '../schema/plan.js';
import { type Column, declaredColumnType, newRow, type Row } from '../schema/types.js';
import { recordNames, splitRecord, tableHints } from './nested.js';
import { type Pins, pinnedHints, pinRecord, pinRow } from './pins.js';
import { type DecodedRecord, jsonRow, type RecordShape } from './shape.js';

/**
 * How the records of one download become rows, and which tables they go to: a small,
 * serialisable plan (parse workers receive it as it is), and the tables it implies: the job's
 * table, child tables (`nested: tables`), and for autotrace and owner lookups the people table
 * (one row per people key) and the link table `<table>__owners`.
 */
export interface ShapePlan {
  type: DataType;
  /** The job's table (logical name). */
  table: string;
  key: string[];
  write: 'append' | 'merge' | 'replace';
  nested: 'tables' | 'json';
  /** The view's top-level fields, or undefined for the core fields of the data type. */
  fields?: string[];
  /** Autotrace: each property's owners go to the people and link tables. */
  autotrace?: { peopleTable: string };
  /** Column types pinned by field name (`columns:`), for the job's own table. */
  columns?: Pins;
  /** An owner lookup: people records found by the owners' people keys of a properties table. */
  ownerLookup?: {
    propertiesTable: string;
    propertyKey: string;
    /** People key -> keys of the properties it owns. */
    owners: [string, (string | number)[]][];
  };
}

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
  /** Columns known before any row (the catalogue's). */
  columns: Column[];
}

export const PEOPLE_KEY = 'people_key';

/** The person fields kept in the people table, the same from autotrace and from ownerLookup. */
const PERSON_FIELDS = ['firstName', 'lastName', 'emails', 'phoneNumbers', 'keys'] as const;

export function ownersTableName(propertiesTable: string): string {
  return `${propertiesTable}__owners`;
}

const POSITION: Column = { name: '_position', type: 'integer' };
const PARENT_POSITION: Column = { name: '_parent_position', type: 'integer' };

/**
 * Declared columns of a field map: scalars and lists, and objects unless they are tables; a
 * pinned field (`columns:`) as its pinned type, an object too.
 */
function declaredColumns(
  fields: FieldMap,
  names: Iterable<string>,
  nested: boolean,
  pins: Pins = {},
): Column[] {
  const out: Column[] = [];
  for (const name of names) {
    const pinned = Object.hasOwn(pins, name) ? pins[name] : undefined;
    const def = Object.hasOwn(fields, name) ? fields[name] : undefined;
    if (def === undefined && pinned === undefined) continue;
    if (pinned !== undefined) out.push({ name, type: pinned });
    else if (!(nested && def!.kind === 'objects'))
      out.push({ name, type: declaredColumnType(def!) });
  }
  return out;
}

function keyType(fields: FieldMap, key: string, pins: Pins = {}): Column['type'] {
  if (Object.hasOwn(pins, key)) return pins[key]!;
  const def = Object.hasOwn(fields, key) ? fields[key] : undefined;
  return def === undefined ? 'text' : declaredColumnType(def);
}

export class JobTables {
  readonly main: string;
  readonly shape: RecordShape;
  /**
   * `nested: json` with no related tables: a record is one row of its fields, nested values as
   * JSON text, so NDJSON lines can be packed straight into rows (see NdjsonPacker).
   */
  readonly plainJson: boolean;
  readonly #related = new Map<string, RelatedTable>();
  readonly #mainHints: FieldMap;
  readonly #mainColumns: Column[];

  constructor(readonly plan: ShapePlan) {
    this.main = plan.table;
    const nested = plan.nested === 'tables';
    const pins = plan.columns ?? {};
    const { ownerLookup } = plan;
    const typeFields = FIELDS[plan.type];
    // Without a view, the columns most records fill; the others come as the data brings them.
    const fieldNames = plan.fields ?? Object.keys(CORE_FIELDS[plan.type]);

    let hints: FieldMap;
    if (ownerLookup) {
      hints = FIELDS.people;
      this.#mainColumns = [];
    } else if (nested) {
      hints = tableHints(plan.type, plan.table).get(plan.table) ?? {};
      // A pinned list or object is one column, not a child table.
      this.#mainColumns = declaredColumns(typeFields, fieldNames, true, pins);
      this.#addChildTables(fieldNames, pins);
    } else {
      hints = typeFields;
      this.#mainColumns = declaredColumns(typeFields, fieldNames, false, pins);
    }
    this.#mainHints = Object.keys(pins).length > 0 ? pinnedHints(hints, pins) : hints;

    const peopleTable = ownerLookup ? plan.table : plan.autotrace?.peopleTable;
    if (peopleTable !== undefined) this.#addPeopleTables(peopleTable);
    const base = this.#recordShape(pins);
    if (ownerLookup) {
      // Links of a property are replaced when its owner is loaded again: keyed by the property.
      this.#addLinkTable(this.#linkTable, this.#propertyColumn);
      this.shape = this.#ownerLookupShape(base);
    } else if (peopleTable !== undefined) {
      this.#addLinkTable(plan.table, plan.key[0]!);
      this.shape = this.#autotraceShape(base, peopleTable);
    } else {
      this.shape = base;
    }
    const asSent = Object.keys(pins).filter((name) => pins[name] === 'text');
    // Read as sent, never decoded: the shape says so to the readers (see RecordShape).
    if (asSent.length > 0) this.shape = Object.assign(this.shape, { asSent: new Set(asSent) });
    this.plainJson = !nested && peopleTable === undefined && Object.keys(pins).length === 0;
  }

  /**
   * Child tables of the fields the download carries, deeper arrays nesting again; a core field's
   * with its core sub-fields as columns, the others as the data brings them.
   */
  #addChildTables(fieldNames: readonly string[], pins: Pins): void {
    const { plan } = this;
    const parentKey = plan.key[0]!;
    const hints = tableHints(plan.type, plan.table);
    const parent: Column = {
      name: parentColumn(parentKey),
      type: keyType(FIELDS[plan.type], parentKey, pins),
    };
    const addChildren = (
      fields: FieldMap,
      core: FieldMap | undefined,
      names: Iterable<string>,
      table: string,
      depth: number,
    ) => {
      for (const name of names) {
        const def: FieldDef | undefined = Object.hasOwn(fields, name) ? fields[name] : undefined;
        if (def?.kind !== 'objects') continue;
        if (depth === 0 && Object.hasOwn(pins, name)) continue;
        const child = childTableName(table, name);
        const coreDef = core && Object.hasOwn(core, name) ? core[name] : undefined;
        const coreItems = coreDef?.kind === 'objects' ? coreDef.fields : undefined;
        const itemNames = Object.keys(coreItems ?? def.fields);
        this.#add({
          name: child,
          key: [],
          replaceBy: { column: parent.name, parentTable: plan.table, parentKey },
          staged: true,
          onlyWhenMerging: true,
          hints: hints.get(child) ?? {},
          columns: [
            parent,
            ...(depth > 0 ? [PARENT_POSITION] : []),
            POSITION,
            ...declaredColumns(def.fields, itemNames, true),
          ],
        });
        addChildren(def.fields, coreItems, itemNames, child, depth + 1);
      }
    };
    addChildren(FIELDS[plan.type], CORE_FIELDS[plan.type], fieldNames, plan.table, 0);
  }

  /** The people table (merged by people key) and, nested, its phone numbers' child table. */
  #addPeopleTables(table: string): void {
    const nested = this.plan.nested === 'tables';
    const personFields = FIELDS.people;
    const peopleColumns: Column[] = [
      { name: PEOPLE_KEY, type: 'text' },
      ...declaredColumns(personFields, PERSON_FIELDS, nested),
    ];
    if (this.plan.ownerLookup) this.#mainColumns.push(...peopleColumns);
    else {
      this.#add({
        name: table,
        key: [PEOPLE_KEY],
        staged: false,
        onlyWhenMerging: false,
        hints: personFields,
        columns: peopleColumns,
      });
    }
    if (!nested) return;
    const phoneDef = personFields.phoneNumbers;
    const phoneFields = phoneDef?.kind === 'objects' ? phoneDef.fields : {};
    const column = parentColumn(PEOPLE_KEY);
    this.#add({
      name: childTableName(table, 'phoneNumbers'),
      key: [],
      replaceBy: { column, parentTable: table, parentKey: PEOPLE_KEY },
      staged: false,
      onlyWhenMerging: false,
      hints: phoneFields,
      columns: [
        { name: column, type: 'text' },
        POSITION,
        ...declaredColumns(phoneFields, Object.keys(phoneFields), true),
      ],
    });
  }

  /** The properties' key as the link table names it (`property_id`). */
  get #propertyColumn(): string {
    const { ownerLookup } = this.plan;
    return `property_${ownerLookup ? ownerLookup.propertyKey : this.plan.key[0]!}`;
  }

  get #linkTable(): string {
    const { ownerLookup } = this.plan;
    return ownersTableName(ownerLookup ? ownerLookup.propertiesTable : this.plan.table);
  }

  /** The link table between properties and their owners (`<properties>__owners`). */
  #addLinkTable(parentTable: string, parentKeyColumn: string): void {
    const { ownerLookup } = this.plan;
    const propertyKey = ownerLookup ? ownerLookup.propertyKey : this.plan.key[0]!;
    const propertyColumn = this.#propertyColumn;
    this.#add({
      name: this.#linkTable,
      key: [],
      replaceBy: { column: propertyColumn, parentTable, parentKey: parentKeyColumn },
      // An autotrace job's links describe its own table's rows: `replace` swaps them in with
      // it. An owner lookup merges into the links of another job's table.
      staged: ownerLookup === undefined,
      onlyWhenMerging: false,
      hints: { title: { kind: 'string' } },
      columns: [
        {
          name: propertyColumn,
          type: keyType(
            FIELDS.properties,
            propertyKey,
            ownerLookup ? {} : (this.plan.columns ?? {}),
          ),
        },
        { name: PEOPLE_KEY, type: 'text' },
        { name: 'title', type: 'text' },
      ],
    });
  }

  /** A record as the job's row (and child rows), its pinned fields pinned first. */
  #recordShape(pins: Pins): RecordShape {
    const { plan } = this;
    const names = recordNames(plan.key);
    const split: RecordShape =
      plan.nested === 'tables'
        ? (record) => {
            const { row, children } = splitRecord(record, plan.table, plan.key, names);
            return { row, related: children };
          }
        : (record) => ({ row: jsonRow(record) });
    if (Object.keys(pins).length === 0) return split;
    return (record) => {
      pinRecord(record, pins);
      const shaped = split(record);
      pinRow(shaped.row, pins, record);
      return shaped;
    };
  }

  /** A person record of the lookup as its people row, children and links to its properties. */
  #ownerLookupShape(base: RecordShape): RecordShape {
    const { plan } = this;
    const owners = new Map(plan.ownerLookup!.owners);
    const linkTable = this.#linkTable;
    const propertyColumn = this.#propertyColumn;
    return (record) => {
      const keys = Array.isArray(record.keys) ? (record.keys as unknown[]) : [];
      const key = keys.find((k): k is string => typeof k === 'string' && owners.has(k));
      if (key === undefined) return base(record);
      const { row, children } = this.#person(record, key, plan.table);
      const related = new Map(children);
      related.set(
        linkTable,
        (owners.get(key) ?? []).map((p) => {
          const link = newRow();
          link[propertyColumn] = p;
          link[PEOPLE_KEY] = key;
          link.title = 'owner';
          return link;
        }),
      );
      return { row, related };
    };
  }

  /** A property with its matched owners: its rows, the people rows and the links. */
  #autotraceShape(base: RecordShape, peopleTable: string): RecordShape {
    const parentKey = this.plan.key[0]!;
    const linkTable = this.#linkTable;
    const propertyColumn = this.#propertyColumn;
    return (record) => {
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
        const { row, children } = this.#person(entry, key, peopleTable);
        people.push(row);
        for (const [table, rows] of children) {
          const list = related.get(table);
          if (list) list.push(...rows);
          else related.set(table, rows);
        }
        const link = newRow();
        link[propertyColumn] = shaped.row[parentKey] ?? null;
        link[PEOPLE_KEY] = key;
        link.title = typeof entry.title === 'string' ? entry.title : null;
        links.push(link);
      }
      related.set(peopleTable, people);
      related.set(linkTable, links);
      return { row: shaped.row, related };
    };
  }

  #personNames = recordNames([PEOPLE_KEY]);

  /** A person's row in a people table, and its child rows (`nested: tables`). */
  #person(
    source: Record<string, unknown>,
    key: string,
    table: string,
  ): { row: Row; children: Map<string, Row[]> } {
    const record: DecodedRecord = Object.create(null);
    record[PEOPLE_KEY] = key;
    for (const field of PERSON_FIELDS) record[field] = source[field] ?? null;
    return this.plan.nested === 'tables'
      ? splitRecord(record, table, [PEOPLE_KEY], this.#personNames)
      : { row: jsonRow(record), children: new Map<string, Row[]>() };
  }

  #add(table: RelatedTable): void {
    this.#related.set(table.name, table);
  }

  /** The table a related name stands for, adding child tables the catalogue did not list. */
  related(name: string): RelatedTable {
    let table = this.#related.get(name);
    if (table === undefined) {
      const parentKey = this.plan.key[0]!;
      table = {
        name,
        key: [],
        replaceBy: { column: parentColumn(parentKey), parentTable: this.main, parentKey },
        staged: true,
        onlyWhenMerging: true,
        hints: {},
        columns: [],
      };
      this.#related.set(name, table);
    }
    return table;
  }

  relatedTables(): RelatedTable[] {
    return [...this.#related.values()];
  }

  /** Whether the job merges into its table (`write: merge`, or an owner lookup). */
  get merging(): boolean {
    return this.plan.write === 'merge' || this.plan.ownerLookup !== undefined;
  }

  /**
   * Whether every row of the job is appended, none merged or replaced by a key (`write:
   * append` or `replace`, with no autotrace): then no file's rows depend on another's having
   * been loaded first, and files may be loaded at once.
   */
  get appendsOnly(): boolean {
    if (this.merging) return false;
    for (const table of this.#related.values()) {
      if (table.key.length > 0 || this.replacesByParent(table)) return false;
    }
    return true;
  }

  /**
   * The columns of the job's rows that the writing thread reads, beside writing them: the
   * merge key, and the keys by which related rows are replaced.
   */
  keysRead(): string[] {
    const keys = new Set(this.merging ? this.plan.key : []);
    for (const table of this.#related.values()) {
      if (table.replaceBy?.parentTable === this.main && this.replacesByParent(table)) {
        keys.add(table.replaceBy.parentKey);
      }
    }
    return [...keys];
  }

  /** Whether rows of `table` are deleted by their parent link while this job loads. */
  replacesByParent(table: RelatedTable): boolean {
    return table.replaceBy !== undefined && (this.merging || !table.onlyWhenMerging);
  }

  /**
   * Whether the parent-link index of `table` is built at the job's end rather than kept up
   * entry by entry as rows come: so for the tables nothing is deleted from while the job
   * loads (the child tables of an append or a replace). The parent links are in no order (a
   * record's id), so every entry lands on a page of its own in an index larger than the page
   * cache; one sort at the end costs a small part of that.
   */
  indexesParentAtEnd(table: RelatedTable): boolean {
    return table.replaceBy !== undefined && !this.replacesByParent(table);
  }

  /** The parent links the job's end indexes (see `indexesParentAtEnd`). */
  parentIndexesAtEnd(): { table: string; column: string }[] {
    const out: { table: string; column: string }[] = [];
    for (const table of this.#related.values()) {
      if (table.replaceBy && this.indexesParentAtEnd(table)) {
        out.push({ table: table.name, column: table.replaceBy.column });
      }
    }
    return out;
  }

  hintsOf(name: string): FieldMap {
    return name === this.main ? this.#mainHints : (this.#related.get(name)?.hints ?? {});
  }

  /** Whether rows of `name` are built aside and swapped in (`write: replace`). */
  staged(name: string): boolean {
    if (this.plan.write !== 'replace') return false;
    return name === this.main || (this.#related.get(name)?.staged ?? false);
  }

  /**
   * The tables as the load stage creates them before any row, with the columns the view or
   * the data type implies, so that a download with no records still leaves its (empty) tables.
   * The job's own table is keyed only when it is merged into.
   */
  definitions(): TableDef[] {
    const mainKey = this.merging ? this.plan.key : [];
    const defs: TableDef[] = [
      {
        name: this.main,
        columns: withMeta(this.#mainColumns),
        key: mainKey,
        hints: this.#mainHints,
      },
    ];
    for (const table of this.#related.values()) {
      defs.push({
        name: table.name,
        columns: withMeta(table.columns),
        key: table.key,
        ...(table.replaceBy ? { parentColumn: table.replaceBy.column } : {}),
        ...(this.indexesParentAtEnd(table) ? { parentIndexAtEnd: true } : {}),
        hints: table.hints,
      });
    }
    return defs;
  }
}

function withMeta(columns: Column[]): Column[] {
  const names = new Set(columns.map((c) => c.name));
  return [...columns, ...META_COLUMNS.filter((c) => !names.has(c.name))];
}
