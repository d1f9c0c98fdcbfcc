import { randomUUID } from 'node:crypto';
import { attachContext } from '../../errors.js';
import type { RunRow, State } from '../../load/destination.js';
import type { Logger } from '../../log.js';
import { type Clock, isoAt, systemClock } from '../clock.js';
import type { RunSummary } from '../outcome.js';
import type { Progress } from '../progress.js';
import { selectJobs } from '../spec/select.js';
import type { JobSpec, PipelineSpec } from '../spec/spec.js';
import { replayable, replaySummary, replayText, unitOf } from './replay.js';
import { endedAt } from './resume.js';
import { openPipelineDestination, type RunOptions, runPipeline } from './run.js';

/**
 * Several pipeline files in one command (`sluice run a.yaml b.yaml c.yaml`): each pipeline with
 * its own lock and summary, one after another (two pipelines may share a destination, whose
 * writer they would only take turns at); a failure of one does not stop the next.
 *
 * The command is a batch: each run records its batch's id and members (each pipeline with its
 * selected jobs). The same command run again after it stopped (a signal, a kill, a failure) is
 * a retry of it, as systemd's `Restart=on-failure` and an orchestrator's retries run it: before
 * running, each member's latest runs are read (its destination opened read-only, like `status`;
 * a destination that cannot be read is unknown). When the latest batch of the same members is
 * incomplete (a member has no succeeded or incomplete run in it), this command continues it:
 * a member done in it is replayed (nothing run or bought) while the batch last did something
 * less than that member's `resume_window` ago, and the others run with their usual resume rule.
 * A complete batch makes the next command a new one, which runs everything. With `--run-key`
 * the key's rules apply per pipeline (prior-work.ts), and `--fresh` starts anew.
 */
export interface BatchMember {
  spec: PipelineSpec;
  file: string;
}

/** How one pipeline of the batch ended: its summary, or what kept it from running. */
export type BatchRun =
  | { file: string; spec: PipelineSpec; summary: RunSummary }
  | { file: string; spec: PipelineSpec; error: unknown };

export interface BatchOptions extends Omit<RunOptions, 'lenientJobs' | 'batch' | 'progress'> {
  /** A progress display for each run. */
  progress: () => Progress;
  /** Called as each pipeline ends, in the command's order. */
  onRun?: (run: BatchRun) => void;
}

export async function runPipelines(
  members: readonly BatchMember[],
  options: BatchOptions,
): Promise<BatchRun[]> {
  const { progress, onRun, ...runOptions } = options;
  const env = options.env ?? process.env;
  const clock = options.clock ?? systemClock;
  // A pipeline none of whose jobs `--job` names is no member of the command.
  const chosen = members.flatMap((m) => {
    const selected = selectJobs(m.spec, options.jobs, true);
    return selected.length > 0 ? [{ ...m, selected }] : [];
  });
  const key = membersKey(chosen);
  const continued =
    options.fresh || options.runKey !== undefined || chosen.length < 2
      ? undefined
      : await latestBatch(chosen, key, env, clock, options.logger);
  const batch = { id: continued?.id ?? randomUUID(), members: key };
  const runs: BatchRun[] = [];
  for (const member of chosen) {
    const { spec, file } = member;
    const replay = continued?.replays.get(spec.name);
    let run: BatchRun;
    if (replay) {
      const summary = replaySummary(replay.run, 'batch', {
        destination: replay.destination,
        startedAt: isoAt(clock),
        seconds: 0,
      });
      options.logger.info({ pipeline: spec.name }, replayText(summary));
      run = { file, spec, summary };
    } else {
      try {
        const summary = await runPipeline(spec, {
          ...runOptions,
          lenientJobs: true,
          batch,
          progress: progress(),
        });
        run = { file, spec, summary };
      } catch (error) {
        // This pipeline could not run (its lock, its destination): the others still do.
        run = { file, spec, error: attachContext(error, { pipeline: spec.name }) };
      }
    }
    runs.push(run);
    onRun?.(run);
    if (options.signal?.aborted) break;
  }
  return runs;
}

/** The batch's members as `_sluice_runs.batch_members` records them: sorted, so order is no matter. */
function membersKey(members: readonly { spec: PipelineSpec; selected: JobSpec[] }[]): string {
  const each = members.map((m) => JSON.stringify([m.spec.name, JSON.parse(unitOf(m.selected))]));
  return `[${each.sort().join(',')}]`;
}

/** A member's part in the latest batch of its command it took part in. */
interface MemberPart {
  batchId: string;
  /** When its newest run of the batch started: the latest batch is the one started last. */
  started: string;
  /** When its runs of the batch last did something. */
  active: string;
  /** Its run of the batch that did its unit of work, as its jobs stand now. */
  done?: RunRow;
  destination: string;
}

/**
 * The latest batch of these members when it is incomplete, with the members to replay: those
 * done in it, within their resume_window of its last activity. Undefined: a new batch.
 */
async function latestBatch(
  members: readonly { spec: PipelineSpec; selected: JobSpec[] }[],
  key: string,
  env: NodeJS.ProcessEnv,
  clock: Clock,
  logger: Logger,
): Promise<{ id: string; replays: Map<string, { run: RunRow; destination: string }> } | undefined> {
  const parts = new Map<string, MemberPart>();
  for (const m of members) {
    const part = await memberPart(m.spec, m.selected, key, env).catch((error: unknown) => {
      logger.debug(
        { pipeline: m.spec.name },
        `could not read the state of '${m.spec.name}' before the run: ${(error as Error).message}`,
      );
      return undefined;
    });
    if (part) parts.set(m.spec.name, part);
  }
  const latest = [...parts.values()].sort((a, b) => (a.started < b.started ? 1 : -1))[0];
  if (!latest) return undefined;
  const inIt = [...parts.entries()].filter(([, p]) => p.batchId === latest.batchId);
  if (inIt.length === members.length && inIt.every(([, p]) => p.done)) return undefined;
  const active = Date.parse(
    inIt
      .map(([, p]) => p.active)
      .sort()
      .at(-1)!,
  );
  const replays = new Map<string, { run: RunRow; destination: string }>();
  for (const m of members) {
    const part = parts.get(m.spec.name);
    if (part?.batchId !== latest.batchId || !part.done) continue;
    const window = m.spec.resumeWindow;
    if (window > 0 && clock.now() - active <= window) {
      replays.set(m.spec.name, { run: part.done, destination: part.destination });
    }
  }
  return replays.size > 0 ? { id: latest.batchId, replays } : undefined;
}

/**
 * Reads a member's runs of its latest batch of these members, its destination read-only (as
 * `status` does: nothing is made for a pipeline that never ran).
 */
async function memberPart(
  spec: PipelineSpec,
  selected: readonly JobSpec[],
  key: string,
  env: NodeJS.ProcessEnv,
): Promise<MemberPart | undefined> {
  const destination = await openPipelineDestination(spec, env, { readOnly: true }).catch(
    (error: unknown) => {
      if ((error as { code?: unknown }).code === 'SLUICE_NO_STATE') return undefined;
      // A database a reader cannot open as it stands (one whose journal of a killed writer only
      // a writer replays): the run is about to open it for writing anyway.
      return openPipelineDestination(spec, env);
    },
  );
  if (destination === undefined) return undefined;
  try {
    if (!(await destination.hasState())) return undefined;
    const state = destination.state;
    const runs = await state.runsOfBatches(spec.name, key, 20);
    const batchId = runs[0]?.batch_id;
    if (!batchId) return undefined;
    const ofBatch = runs.filter((r) => r.batch_id === batchId);
    let done: RunRow | undefined;
    for (const run of ofBatch) {
      if (await replayable(state, run, selected)) {
        done = run;
        break;
      }
    }
    return {
      batchId,
      started: ofBatch[0]!.started_at,
      active: await lastActive(state, ofBatch),
      ...(done ? { done } : {}),
      destination: destination.description,
    };
  } finally {
    await destination.close();
  }
}

async function lastActive(state: State, runs: readonly RunRow[]): Promise<string> {
  let last = '';
  for (const run of runs) {
    const at = await endedAt(state, run);
    if (at > last) last = at;
  }
  return last;
}
