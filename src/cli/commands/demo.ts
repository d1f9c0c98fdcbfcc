import { isAbsolute, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadPipeline, runPipeline } from '../../pipeline/index.js';
import type { CliContext } from '../context.js';
import { exitCodeOfRun } from '../exit-codes.js';
import { tablesText } from '../format.js';
import { secondsText, writeJson, writeLine } from '../output.js';

/** pipelines/demo.yaml of this package, wherever it is run from (src/ or dist/). */
export const DEMO_PIPELINE = fileURLToPath(
  new URL('../../../pipelines/demo.yaml', import.meta.url),
);

/**
 * `sluice demo`: starts the emulator in this process, runs the demo pipeline into
 * data/demo.sqlite, prints the summary and a few queries to try. Spends no real credits.
 */
export async function demoCommand(
  args: { json?: boolean; file?: string },
  ctx: CliContext,
): Promise<number> {
  const { io, env, signal } = ctx;
  const { startEmulator } = await import('../../emulator/index.js');
  const emulator = await startEmulator({ port: 0, queueMs: 300, rate: 4000 });
  try {
    const demoEnv = {
      // Into ./data/demo.sqlite of the folder it is run from (the repository, or a user's
      // project where sluice is installed), never inside the installed package.
      SLUICE_DESTINATION: `sqlite:${resolve('data', 'demo.sqlite')}`,
      ...env,
      SLUICE_API_URL: emulator.v4Url,
      SLUICE_EMAIL: emulator.options.email,
      SLUICE_PASSWORD: emulator.options.password,
    };
    const spec = await loadPipeline(args.file ?? DEMO_PIPELINE, demoEnv);
    if (!args.json) {
      writeLine(
        io.stdout,
        `Emulator of the data-search service running at ${emulator.v4Url} (no real credits are spent).`,
      );
      writeLine(io.stdout, `Running pipeline '${spec.name}' from ${spec.file}...`);
    }
    const summary = await runPipeline(spec, {
      env: demoEnv,
      signal,
      logger: ctx.logger,
      progress: ctx.terminal.progress(!args.json),
    });
    if (args.json) {
      writeJson(io.stdout, summary);
      return exitCodeOfRun(summary);
    }
    writeLine(io.stdout);
    writeLine(io.stdout, `Done: ${summary.status} in ${secondsText(summary.seconds)}s.`);
    for (const job of summary.jobs) {
      writeLine(
        io.stdout,
        `  ${job.job.padEnd(20)} ${job.status.padEnd(8)} ${String(job.loaded).padStart(6)} rows into ${tablesText(job.tables)}${job.rejected ? ` (${job.rejected} rejected)` : ''}`,
      );
    }
    const db = summary.destination.replace(/^sqlite:/, '');
    writeLine(io.stdout);
    writeLine(io.stdout, 'Try:');
    writeLine(
      io.stdout,
      `  sqlite3 ${db} "select city, count(*), round(avg(mostRecentPriceAmount)) from texas_homes group by city order by 2 desc"`,
    );
    writeLine(
      io.stdout,
      `  sqlite3 ${db} "select name, city, numEmployeesMax from austin_businesses order by numEmployeesMax desc limit 5"`,
    );
    writeLine(
      io.stdout,
      `  sqlite3 ${db} "select h.address, p.amountMin, p.dateSeen from texas_homes h join texas_homes__prices p on p._parent_id = h.id limit 5"`,
    );
    writeLine(
      io.stdout,
      `  sqlite3 ${db} "select job, download_id, status, num_records from _sluice_downloads"`,
    );
    writeLine(io.stdout, `  ${statusHint(spec.file, summary.destination)}`);
    return exitCodeOfRun(summary);
  } finally {
    await emulator.close();
  }
}

/**
 * The `status` command for what the demo did: its pipeline file where it is (inside the
 * installed package, when sluice is installed: not `pipelines/demo.yaml` of the user's folder),
 * and the database it wrote, which the file alone would not name from another folder.
 */
function statusHint(file: string, destination: string): string {
  const from = relative(process.cwd(), file);
  const path = from.startsWith('..') || isAbsolute(from) ? file : from;
  return `SLUICE_DESTINATION=${shellWord(destination)} npx sluice status ${shellWord(path)}`;
}

/** A word as sh reads it: quoted when it holds anything but plain path characters. */
function shellWord(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replaceAll("'", "'\\''")}'`;
}
