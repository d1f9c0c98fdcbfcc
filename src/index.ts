/**
 * sluice as a library: run a pipeline, load and validate a pipeline file, talk to the service,
 * open a destination, and the typed errors. The emulator is at `sluice/emulator`.
 *
 * ```ts
 * import { loadPipeline, noProgress, runPipeline, silentLogger } from 'sluice';
 * const spec = await loadPipeline('pipelines/austin-homes.yaml');
 * const summary = await runPipeline(spec, { logger: silentLogger(), progress: noProgress });
 * ```
 */
export {
  type ClientEvent,
  type ClientOptions,
  connectionFromEnv,
  createServiceClient,
  type ServiceClient,
} from './client/index.js';
export {
  ApiError,
  CreditGuardError,
  NetworkError,
  PipelineSpecError,
  QueryError,
  SluiceError,
  UsageError,
} from './errors.js';
export {
  type Destination,
  type DestinationEntry,
  DestinationError,
  destinations,
  openDestination,
  registerDestination,
} from './load/index.js';
export { createLogger, type Logger, silentLogger } from './log.js';
export {
  type Clock,
  type CreditEstimate,
  type Credits,
  type ErrorInfo,
  estimateJob,
  type JobOutcome,
  type JobSpec,
  type JobStatus,
  loadPipeline,
  noProgress,
  type PipelineSpec,
  type PlanReport,
  type Progress,
  parsePipeline,
  planPipeline,
  type RunOptions,
  type RunStatus,
  type RunSummary,
  runPipeline,
  type Stage,
} from './pipeline/index.js';
