export { type BatchMember, runPipelines } from './batch.js';
export type { BudgetStanding } from './budget.js';
export type { Clock } from './clock.js';
export { type CreditEstimate, estimateJob } from './estimate.js';
export { jobColumns } from './job-columns.js';
export {
  destinationPassword,
  type OneJob,
  oneJobPipeline,
  oneJobRunKey,
  oneJobTable,
} from './one-job.js';
export type {
  Credits,
  ErrorInfo,
  IncrementalRange,
  JobOutcome,
  JobStatus,
  OriginalRun,
  RunStatus,
  RunSummary,
  Stage,
} from './outcome.js';
export { type PlanReport, planPipeline, savedState } from './plan-report.js';
export { noProgress, type Progress } from './progress.js';
export { describeKind } from './real-time.js';
export { replayText } from './replay.js';
export { clientFor, type RunOptions, runPipeline } from './run.js';
export { selectJobs, unmatchedPatterns } from './select.js';
export {
  type JobSpec,
  type LoadOptions,
  loadPipeline,
  type PipelineSpec,
  parsePipeline,
  pipelineJsonSchema,
} from './spec.js';
export { checkSharedTables } from './table-names.js';
