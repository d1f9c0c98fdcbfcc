import {
  CORE_FIELDS,
  DATA_TYPES,
  type DataType,
  FIELDS,
  type FieldDef,
  type FieldMap,
  isDataType,
  resolveField,
  type ScalarKind,
} from '../../catalog.js';
import { iso, mix, Rng } from '../data/dataset.js';

/**
 * Fields the emulator serves beyond the core ones its records carry (`--extra-field`, or
 * `PUT /_emulator/fields`): fields the catalogue documents but the emulator does not make up,
 * and fields no catalogue lists, as a service that has added a field serves it. An extra field
 * is part of the emulator's schema: queries, views and downloads take it like any other.
 *
 * A field is written `TYPE.PATH[:KIND][=VALUE|VALUE...]`: `properties.buildingName`,
 * `properties.transactions.ownerType=individual|company`, `businesses.solarPanels:boolean`. A
 * path into a list of objects sets the field on each item; a list of objects the core records
 * never carry (`properties.deposits.amount`) is made with one item. The kind is the catalogue's
 * for a field it lists, else as written (`string` by default); values are drawn per record
 * from the ones given, or made up from the kind, the same for the same seed.
 */

const KINDS = ['string', 'number', 'integer', 'boolean', 'date', 'list'] as const;
type Leaf = Exclude<FieldDef, { kind: 'objects' }>;
type Value = string | number | boolean;

export interface ExtraField {
  type: DataType;
  path: string;
  def: Leaf;
  /** The values to draw from; made up from the kind when empty. */
  values: Value[];
  /** As written, for listings. */
  spec: string;
}

const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const ISO_SECONDS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/;

/** One `--extra-field` spec; throws RangeError saying what is wrong with it. */
export function parseExtraField(spec: string): ExtraField {
  const bad = (why: string) => new RangeError(`extra field '${spec}': ${why}`);
  const match = /^([^.:=]+)\.([^:=]+)(?::([^=]*))?(?:=(.*))?$/s.exec(spec.trim());
  if (!match) throw bad('expected TYPE.FIELD[:KIND][=VALUE|VALUE...]');
  const [, type, path, kind, values] = match as unknown as [
    string,
    string,
    string,
    string?,
    string?,
  ];
  if (!isDataType(type)) throw bad(`${type} is not a data type (${DATA_TYPES.join(', ')})`);
  const parts = path.split('.');
  if (!parts.every((part) => NAME.test(part))) throw bad('a field name is letters, digits and _');
  const def = leafOf(type, parts, kind, bad);
  return {
    type,
    path,
    def,
    values: values === undefined ? [] : values.split('|').map((v) => givenValue(def, v, bad)),
    spec: spec.trim(),
  };
}

function leafOf(
  type: DataType,
  parts: string[],
  kind: string | undefined,
  bad: (why: string) => RangeError,
): Leaf {
  for (let i = 1; i < parts.length; i++) {
    const parent = resolveField(type, parts.slice(0, i).join('.'));
    if (parent !== undefined && parent.kind !== 'objects') {
      throw bad(`${parts.slice(0, i).join('.')} is not a list of objects`);
    }
  }
  const known = resolveField(type, parts.join('.'));
  if (known?.kind === 'objects') {
    throw bad(
      `it holds nested records: serve its fields (${parts.join('.')}.${Object.keys(known.fields)[0]})`,
    );
  }
  if (kind === undefined || kind === '') return known ?? { kind: 'string' };
  if (!(KINDS as readonly string[]).includes(kind)) throw bad(`kind is one of ${KINDS.join(', ')}`);
  const given: Leaf =
    kind === 'list' ? { kind: 'list', of: 'string' } : { kind: kind as ScalarKind };
  if (known !== undefined && describe(known) !== describe(given)) {
    throw bad(`the catalogue lists it as ${describe(known)}`);
  }
  return given;
}

function describe(def: Leaf): string {
  return def.kind === 'list' ? `a list of ${def.of}` : def.kind;
}

function givenValue(def: Leaf, text: string, bad: (why: string) => RangeError): Value {
  const kind = def.kind === 'list' ? def.of : def.kind;
  switch (kind) {
    case 'number':
    case 'integer': {
      const n = Number(text);
      if (text.trim() === '' || !Number.isFinite(n) || (kind === 'integer' && !Number.isInteger(n)))
        throw bad(`'${text}' is not ${kind === 'integer' ? 'a whole number' : 'a number'}`);
      return n;
    }
    case 'boolean':
      if (text !== 'true' && text !== 'false') throw bad(`'${text}' is not true or false`);
      return text === 'true';
    case 'date':
      if (!ISO_SECONDS.test(text)) throw bad(`'${text}' is not a date like 2026-01-31T12:00:00Z`);
      return text;
    default:
      return text;
  }
}

type Json = Record<string, unknown>;

/** The extra fields an emulator serves: its schema beyond the catalogue, and their values. */
export class ExtraFields {
  readonly list: readonly ExtraField[];
  readonly #schema: Record<DataType, FieldMap>;
  readonly #paths: ReadonlySet<string>;

  constructor(list: readonly ExtraField[] = []) {
    this.list = list;
    this.#schema = { ...FIELDS };
    for (const field of list) {
      this.#schema[field.type] = withPath(
        this.#schema[field.type],
        field.path.split('.'),
        field.def,
      );
    }
    this.#paths = new Set(DATA_TYPES.flatMap((type) => pathsOf(this.#schema[type])));
  }

  static parse(specs: readonly string[]): ExtraFields {
    return new ExtraFields(specs.map(parseExtraField));
  }

  /** The definition of a dotted path of a data type: the catalogue's or an extra field's. */
  resolve(type: DataType, path: string): FieldDef | undefined {
    let fields: FieldMap | undefined = this.#schema[type];
    let def: FieldDef | undefined;
    for (const part of path.split('.')) {
      if (!fields || !Object.hasOwn(fields, part)) return undefined;
      def = fields[part];
      fields = def?.kind === 'objects' ? def.fields : undefined;
    }
    return def;
  }

  /** Whether some data type has the dotted path (views name fields of any type). */
  knows(path: string): boolean {
    return this.#paths.has(path);
  }

  /** The top-level fields a record of the type carries: the core ones, then the extra ones. */
  columns(type: DataType): string[] {
    const columns = new Set(Object.keys(CORE_FIELDS[type]));
    for (const field of this.list) if (field.type === type) columns.add(field.path.split('.')[0]!);
    return [...columns];
  }

  /** Sets the extra fields of a type on one of its records (index `index` of the dataset). */
  apply(type: DataType, index: number, record: Json, seed: number): void {
    for (const field of this.list) {
      if (field.type !== type) continue;
      const parts = field.path.split('.');
      const rng = new Rng(mix(seed, hashText(field.spec), index));
      // A list the core records carry keeps its absence; one they never carry is made.
      const make = !Object.hasOwn(CORE_FIELDS[type], parts[0]!);
      setAt(record, parts, 0, make, () => valueFor(field, rng));
    }
  }
}

function withPath(fields: FieldMap, parts: string[], leaf: Leaf): FieldMap {
  const [name, ...rest] = parts as [string, ...string[]];
  const have = Object.hasOwn(fields, name) ? fields[name] : undefined;
  if (rest.length === 0) return have === undefined ? { ...fields, [name]: leaf } : fields;
  const inner = have?.kind === 'objects' ? have.fields : {};
  return { ...fields, [name]: { kind: 'objects', fields: withPath(inner, rest, leaf) } };
}

function pathsOf(fields: FieldMap, prefix = ''): string[] {
  return Object.entries(fields).flatMap(([name, def]) => [
    prefix + name,
    ...(def.kind === 'objects' ? pathsOf(def.fields, `${prefix}${name}.`) : []),
  ]);
}

function setAt(
  value: Json,
  parts: readonly string[],
  depth: number,
  make: boolean,
  next: () => unknown,
): void {
  const name = parts[depth]!;
  if (depth === parts.length - 1) {
    value[name] = next();
    return;
  }
  let inner = value[name];
  if (inner === undefined && make) {
    inner = [{}];
    value[name] = inner;
  }
  const items = Array.isArray(inner) ? inner : [inner];
  for (const item of items) {
    if (item !== null && typeof item === 'object' && !Array.isArray(item)) {
      setAt(item as Json, parts, depth + 1, make, next);
    }
  }
}

function valueFor(field: ExtraField, rng: Rng): unknown {
  if (field.def.kind === 'list') {
    const n = rng.int(1, 2);
    return Array.from({ length: n }, () => scalarFor(field, 'string', rng));
  }
  return scalarFor(field, field.def.kind, rng);
}

function scalarFor(field: ExtraField, kind: ScalarKind, rng: Rng): Value {
  if (field.values.length > 0) return rng.pick(field.values);
  switch (kind) {
    case 'number':
      return Math.round(rng.next() * 1_000_000) / 100;
    case 'integer':
      return rng.int(0, 999);
    case 'boolean':
      return rng.chance(0.5);
    case 'date':
      return iso(rng.time());
    case 'string':
      return `${field.path.split('.').at(-1)} ${rng.int(1, 40)}`;
  }
}

/** A 32-bit hash of text (FNV-1a), to seed a field's values apart from another's. */
function hashText(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return h >>> 0;
}
