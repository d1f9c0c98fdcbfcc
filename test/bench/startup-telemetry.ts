/**
 * What OpenTelemetry's variables cost a command's start: `sluice --version` and `sluice validate`
 * with OTEL unset and set (an endpoint no one listens on: these commands send nothing), run in
 * turns in one run, median of each; and what loading the exporter itself costs (a fresh node
 * importing dist/cli/telemetry/otlp.js, against one importing nothing), which only `run` pays,
 * and only with an endpoint set.
 *
 * With `--sdk DIR` (a folder where `npm install @opentelemetry/sdk-node
 * @opentelemetry/exporter-trace-otlp-http @opentelemetry/exporter-metrics-otlp-http` ran), also
 * what importing OpenTelemetry's own SDK and exporters costs, in the same turns.
 *
 *   npx tsx test/bench/startup-telemetry.ts [--rounds 15] [--sdk DIR]
 */
import { fileURLToPath } from 'node:url';
import { measure } from './measure.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const roundsAt = process.argv.indexOf('--rounds');
const ROUNDS = roundsAt > 0 ? Number(process.argv[roundsAt + 1]) : 15;

const OTEL = {
  OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9/',
  OTEL_SERVICE_NAME: 'bench',
};
const UNSET = { OTEL_EXPORTER_OTLP_ENDPOINT: '', OTEL_SERVICE_NAME: '' };

const sdkAt = process.argv.indexOf('--sdk');
const SDK = sdkAt > 0 ? process.argv[sdkAt + 1] : undefined;

const cases: { name: string; args: string[]; env: Record<string, string>; cwd?: string }[] = [
  { name: '--version, OTEL unset', args: ['bin/sluice.js', '--version'], env: UNSET },
  { name: '--version, OTEL set', args: ['bin/sluice.js', '--version'], env: OTEL },
  {
    name: 'validate, OTEL unset',
    args: ['bin/sluice.js', 'validate', 'pipelines/demo.yaml'],
    env: UNSET,
  },
  {
    name: 'validate, OTEL set',
    args: ['bin/sluice.js', 'validate', 'pipelines/demo.yaml'],
    env: OTEL,
  },
  { name: 'node, importing nothing', args: ['--input-type=module', '-e', ''], env: UNSET },
  {
    name: 'node, importing the exporter',
    args: ['--input-type=module', '-e', "await import('./dist/cli/telemetry/otlp.js')"],
    env: UNSET,
  },
  ...(SDK
    ? [
        {
          name: 'node, importing the SDK',
          args: [
            '--input-type=module',
            '-e',
            ['sdk-node', 'exporter-trace-otlp-http', 'exporter-metrics-otlp-http']
              .map((p) => `await import('@opentelemetry/${p}');`)
              .join(''),
          ],
          env: UNSET,
          cwd: SDK,
        },
      ]
    : []),
];

const times = new Map<string, number[]>(cases.map((c) => [c.name, []]));
for (let round = 0; round < ROUNDS; round++) {
  for (const c of cases) {
    const r = await measure(process.execPath, c.args, c.cwd ?? ROOT, c.env);
    if (r.code !== 0) throw new Error(`${c.name}: exit ${r.code}: ${r.stderr}`);
    times.get(c.name)!.push(r.seconds * 1000);
  }
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
console.log(`median of ${ROUNDS} rounds, each case in turn (ms):`);
for (const [name, xs] of times) console.log(`  ${name.padEnd(32)} ${median(xs).toFixed(0)}`);
