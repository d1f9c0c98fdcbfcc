export type { Clock } from './clock.js';
export { describeKind } from './extract/real-time.js';
export type { BudgetStanding } from './guard/budget.js';
export { type CreditEstimate, estimateJob } from './guard/estimate.js';
export { jobColumns } from './load/job-columns.js';
export {
  type AlertTargetDocument,
  alertTargets,
  notifyRun,
  notifyTargets,
  type RunEnd,
  testTargets,
} from './notify/notify.js';
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
export { noProgress, type Progress } from './progress.js';
export { budgetsNow, type PlanReport, planPipeline, savedState } from './report/plan-report.js';
export { type BatchMember, runPipelines } from './run/batch.js';
export { replayText } from './run/replay.js';
export { clientFor, type RunOptions, runPipeline } from './run/run.js';
export {
  destinationPassword,
  type OneJob,
  oneJobPipeline,
  oneJobRunKey,
  oneJobTable,
  withoutPassword,
} from './spec/one-job.js';
export { selectJobs, unmatchedPatterns } from './spec/select.js';
export {
  type JobSpec,
  type LoadOptions,
  loadPipeline,
  namedTable,
  type PipelineSpec,
  parsePipeline,
  pipelineJsonSchema,
} from './spec/spec.js';
export { DEFAULT_PARALLEL_JOBS } from './spec/spec-format.js';
export { checkSharedTables } from './spec/table-names.js';
export { withTracer } from './trace.js';
