import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { parseEnv } from 'node:util';
import { SluiceError } from '../errors.js';
import { type EnvLayer, type EnvLookup, envLookup } from '../util/env-layers.js';
import { fileProblem } from '../util/secret-file.js';

/**
 * The environment of one command: the process's, then what `--env-file PATH` and the `.env`
 * beside the pipeline file add (the `.env` of the current folder for a command without one),
 * each read as Node's own `process.loadEnvFile` reads it and never overriding what an earlier
 * one set. sluice's own variables given as `SLUICE_*_FILE` (mounted secrets) are read here, so
 * every part of sluice sees `SLUICE_PASSWORD` however it was given.
 */
export interface CommandEnv {
  /** What sluice itself reads (SLUICE_DESTINATION, the connection of commands without a file). */
  env: NodeJS.ProcessEnv;
  /** A pipeline file's variables, the `.env` beside it included, and where each came from. */
  forFile(file: string): { env: NodeJS.ProcessEnv; lookup: EnvLookup };
  /** What the env files hold that is not as it should be: said once, never a value. */
  warnings: string[];
}

export interface CommandEnvOptions {
  /** `--env-file PATH`, from the current folder. */
  envFile?: string;
  /** The folders of the command's pipeline files, or the one it works in; `.env` is read there. */
  folders: readonly string[];
  cwd?: string;
}

export function commandEnv(base: NodeJS.ProcessEnv, options: CommandEnvOptions): CommandEnv {
  const cwd = options.cwd ?? process.cwd();
  const warnings: string[] = [];
  const given = options.envFile === undefined ? undefined : resolve(cwd, options.envFile);
  const envFile = given === undefined ? undefined : readEnvFile(given, true, warnings);
  const dotEnvs = new Map<string, EnvLayer | undefined>();
  const dotEnv = (folder: string) => {
    if (!dotEnvs.has(folder)) {
      dotEnvs.set(folder, readEnvFile(join(folder, '.env'), false, warnings));
    }
    return dotEnvs.get(folder);
  };
  const layersOf = (folders: readonly string[]): EnvLayer[] => [
    { vars: base },
    ...(envFile ? [envFile] : []),
    ...folders.flatMap((folder) => dotEnv(folder) ?? []),
  ];
  const folders = [...new Set(options.folders.map((f) => resolve(cwd, f)))];
  const layers = layersOf(folders);
  warnings.push(...disagreements(layers.slice(envFile ? 2 : 1)));
  return {
    env: flatten(layers, envLookup(layers, cwd)),
    forFile(file) {
      const own = layersOf([dirname(resolve(cwd, file))]);
      const lookup = envLookup(own, cwd);
      return { env: flatten(own, lookup), lookup };
    },
    warnings,
  };
}

/**
 * The layers as one environment: for each variable the first layer's value, and each
 * `SLUICE_*` variable given as `SLUICE_*_FILE` read from its file (only sluice's own: a
 * `*_FILE` of another program is that program's business, and is not read).
 */
function flatten(layers: readonly EnvLayer[], lookup: EnvLookup): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...layers[0]?.vars };
  for (const layer of layers.slice(1)) {
    for (const [name, value] of Object.entries(layer.vars)) {
      if (value && !env[name]) env[name] = value;
    }
  }
  const names = new Set(
    layers.flatMap((l) => Object.keys(l.vars)).filter((n) => /^SLUICE_\w+_FILE$/.test(n)),
  );
  for (const name of names) {
    const setting = lookup(name.slice(0, -'_FILE'.length));
    if (setting) env[name.slice(0, -'_FILE'.length)] = setting.value;
  }
  return env;
}

/**
 * Variables of sluice that two `.env` files of one command (pipeline files in two folders) set
 * differently: each file's `${VAR}`s take its own, but what sluice reads itself takes the first.
 */
function disagreements(files: readonly EnvLayer[]): string[] {
  const out: string[] = [];
  files.forEach((layer, i) => {
    for (const [name, value] of Object.entries(layer.vars)) {
      if (!name.startsWith('SLUICE_')) continue;
      const earlier = files.slice(0, i).find((l) => l.vars[name] && l.vars[name] !== value);
      if (earlier) {
        out.push(
          `${name} differs in ${earlier.file} and ${layer.file}: each pipeline file's \${${name}} takes its own, but sluice's own setting takes the first's for the whole command`,
        );
      }
    }
  });
  return out;
}

/**
 * An env file's variables, read by Node's own parser (`util.parseEnv`, the reader of
 * `node --env-file` and `process.loadEnvFile`). A missing `.env` is no `.env`; a missing
 * `--env-file` is a mistake, said with the file's name.
 */
function readEnvFile(path: string, required: boolean, warnings: string[]): EnvLayer | undefined {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (!required && (code === 'ENOENT' || code === 'ENOTDIR')) return undefined;
    throw new SluiceError(
      `${required ? '--env-file ' : ''}${path}: cannot read the env file: ${fileProblem(error)}`,
      { code: 'SLUICE_SECRET_FILE' },
    );
  }
  const vars = parseEnv(text);
  // Node reads a line that is not NAME=value as the first part of the next line's name, which
  // it then loses: said by line number, since the line may be a value pasted on its own.
  const lines = text.split(/\r?\n/);
  for (const name of Object.keys(vars)) {
    if (!/\s/.test(name)) continue;
    const first = name.split(/\r?\n/)[0]!.trim();
    const line = lines.findIndex((l) => l.trim().startsWith(first)) + 1;
    warnings.push(
      `${path}:${line}: not a NAME=value line, and it hides the variable on the line after it (Node's reader joins them): fix or remove it`,
    );
    delete vars[name];
  }
  return { vars, file: path };
}
