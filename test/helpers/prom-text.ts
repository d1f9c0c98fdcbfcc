/**
 * A strict parser of Prometheus' text exposition format (0.0.4), the one node_exporter's
 * textfile collector reads: it throws where Prometheus would refuse the file (a bad name or
 * escape, a TYPE after its samples, a metric's samples not together, a series twice, no final
 * newline). https://prometheus.io/docs/instrumenting/exposition_formats/
 */

export interface Family {
  name: string;
  help?: string;
  type?: string;
  samples: { labels: Record<string, string>; value: number }[];
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const TYPES = new Set(['counter', 'gauge', 'histogram', 'summary', 'untyped']);

export function parsePromText(text: string): Map<string, Family> {
  if (text !== '' && !text.endsWith('\n')) throw new Error('the last line has no newline');
  const families = new Map<string, Family>();
  const series = new Set<string>();
  let last: string | undefined;
  const family = (name: string) => {
    let f = families.get(name);
    if (!f) {
      f = { name, samples: [] };
      families.set(name, f);
    }
    return f;
  };
  const lines = text.split('\n').slice(0, -1);
  lines.forEach((line, i) => {
    const where = `line ${i + 1}`;
    if (line.trim() === '') return;
    if (line.startsWith('#')) {
      const m = /^#\s+(HELP|TYPE)\s+(\S+)(?:\s(.*))?$/.exec(line);
      if (!m) return; // a comment
      const [, kind, name, rest = ''] = m;
      if (!NAME.test(name!)) throw new Error(`${where}: bad metric name '${name}'`);
      const f = family(name!);
      if (kind === 'HELP') {
        if (f.help !== undefined) throw new Error(`${where}: a second HELP for ${name}`);
        f.help = unescapeText(rest, false, where);
      } else {
        if (f.type !== undefined) throw new Error(`${where}: a second TYPE for ${name}`);
        if (f.samples.length > 0) throw new Error(`${where}: TYPE of ${name} after its samples`);
        if (!TYPES.has(rest.trim())) throw new Error(`${where}: unknown type '${rest}'`);
        f.type = rest.trim();
      }
      return;
    }
    const { name, labels, value } = sample(line, where);
    if (last !== name && families.get(name)?.samples.length) {
      throw new Error(`${where}: samples of ${name} are not together`);
    }
    last = name;
    const key = `${name}${JSON.stringify(Object.entries(labels).sort())}`;
    if (series.has(key)) throw new Error(`${where}: series ${key} twice`);
    series.add(key);
    family(name).samples.push({ labels, value });
  });
  return families;
}

function sample(line: string, where: string) {
  const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})?[ \t]+(\S+)(?:[ \t]+(-?\d+))?[ \t]*$/.exec(line);
  if (!m) throw new Error(`${where}: not a sample: ${line}`);
  const [, name, braces, raw] = m;
  const labels: Record<string, string> = {};
  if (braces) {
    let rest = braces.slice(1, -1);
    while (rest.length > 0) {
      const l = /^([^=\s]+)="((?:[^"\\]|\\.)*)"(,?)/.exec(rest);
      if (!l) throw new Error(`${where}: bad labels ${braces}`);
      const [all, label, value, comma] = l;
      if (!LABEL.test(label!) || label!.startsWith('__')) {
        throw new Error(`${where}: bad label name '${label}'`);
      }
      if (label! in labels) throw new Error(`${where}: label ${label} twice`);
      labels[label!] = unescapeText(value!, true, where);
      rest = rest.slice(all.length);
      if (!comma && rest.length > 0) throw new Error(`${where}: bad labels ${braces}`);
    }
  }
  const value = /^(NaN|[+-]Inf)$/.test(raw!)
    ? Number(raw!.replace('Inf', 'Infinity'))
    : Number(raw);
  if (Number.isNaN(value) && raw !== 'NaN') throw new Error(`${where}: bad value '${raw}'`);
  return { name: name!, labels, value };
}

function unescapeText(text: string, quotes: boolean, where: string): string {
  return text.replace(/\\(.)/g, (all, c: string) => {
    if (c === '\\') return '\\';
    if (c === 'n') return '\n';
    if (c === '"' && quotes) return '"';
    throw new Error(`${where}: bad escape ${all}`);
  });
}
