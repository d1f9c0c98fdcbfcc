import { dirname, resolve } from 'node:path';
import { UsageError } from '../errors.js';
import { readSecretFile } from './secret-file.js';

/**
 * Where a setting's value came from, for `validate` and `status` to say; never the value.
 * `pipeline_file` with a variable: the default of `${VAR:-default}`; `unset`: nothing gave it;
 * `unreadable`: a `${file:PATH}` that cannot be read (where a command does not need it).
 */
export type SettingOrigin =
  | { from: 'environment'; variable: string }
  | { from: 'env_file'; variable: string; file: string }
  | { from: 'secret_file'; file: string; variable?: string }
  | { from: 'pipeline_file'; variable?: string }
  | { from: 'unset'; variable: string }
  | { from: 'unreadable'; file: string };

/** Where a credential of a pipeline file (`source.password`, say) came from: each part of it. */
export interface CredentialSource {
  credential: string;
  origins: SettingOrigin[];
}

export interface Setting {
  value: string;
  origin: SettingOrigin;
}

/**
 * Variables from one place: the process's environment (no `file`), or an env file (`.env`,
 * `--env-file`). A `NAME_FILE` path written in an env file starts at that file's folder.
 */
export interface EnvLayer {
  vars: Readonly<Record<string, string | undefined>>;
  file?: string;
}

/** A variable's value and where it came from; undefined when no layer sets it. */
export type EnvLookup = (name: string) => Setting | undefined;

/**
 * Looks variables up in layers, the first one winning (the environment, then `--env-file`,
 * then the `.env` beside the pipeline file). In each layer `NAME_FILE` (the Docker and
 * Kubernetes convention for mounted secrets) stands for `NAME`, read from that file: a layer
 * that sets both is refused, so which one is used is never a guess. An empty value is unset,
 * as `${VAR}` in a pipeline file treats it. Each secret file is read once, when first asked for.
 */
export function envLookup(layers: readonly EnvLayer[], cwd = process.cwd()): EnvLookup {
  const found = new Map<string, Setting | undefined>();
  const lookup = (name: string): Setting | undefined => {
    for (const layer of layers) {
      const value = layer.vars[name];
      const path = layer.vars[`${name}_FILE`];
      const where = layer.file ?? 'the environment';
      if (value && path) {
        throw new UsageError(
          `${name} and ${name}_FILE are both set (in ${where}): keep one, the value or the file that holds it`,
        );
      }
      if (value) {
        return {
          value,
          origin: layer.file
            ? { from: 'env_file', variable: name, file: layer.file }
            : { from: 'environment', variable: name },
        };
      }
      if (path) {
        const file = resolve(layer.file ? dirname(layer.file) : cwd, path);
        return {
          value: readSecretFile(file, `${name}_FILE${layer.file ? ` (in ${layer.file})` : ''}`),
          origin: { from: 'secret_file', file, variable: `${name}_FILE` },
        };
      }
    }
    return undefined;
  };
  return (name) => {
    if (!found.has(name)) found.set(name, lookup(name));
    return found.get(name);
  };
}
