import { userInfo } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CREDIT_TYPE_OF, type DataType } from '../../../catalog.js';
import { withoutPassword } from '../../../pipeline/index.js';

/** What `sluice init` was told, or chose by default. */
export interface InitAnswers {
  /** The pipeline's name: its file is `<name>.yaml`, its units `sluice-<name>.*`. */
  name: string;
  type: DataType;
  query: string;
  records: number | 'all';
  destination: string;
  api: 'v4' | 'v3';
  /** v4: an email and a password, or the portal's API token alone (v3 always takes the token). */
  auth: 'login' | 'token';
  /** The service's URL when it is known: not a secret, and saves looking it up. */
  url?: string;
  /** How many records the query matched when init counted them (free). */
  found?: number;
}

export interface InitFile {
  /** Its name in the pipeline's folder. */
  name: string;
  text: string;
}

/** The installed command, wherever it is run from (src/ or dist/). */
const SLUICE_BIN = fileURLToPath(new URL('../../../../bin/sluice.js', import.meta.url));

/**
 * The files of a new pipeline, in `dir`: the commented pipeline file, a `.env.example` of the
 * variables it reads, and the cron line and the systemd service and timer that run it nightly
 * (the forms docs/scheduling.md documents, with absolute paths: cron's and systemd's working
 * folder and PATH are not the user's). No secret is ever written.
 */
export function initFiles(answers: InitAnswers, dir: string): InitFile[] {
  const { name } = answers;
  const file = join(dir, `${name}.yaml`);
  // The node and the sluice this was written with: cron's PATH may have neither.
  const command = `${shellWord(process.execPath)} ${shellWord(SLUICE_BIN)} run ${shellWord(file)} --json --log-format json --no-progress`;
  return [
    { name: `${name}.yaml`, text: pipelineText(answers) },
    { name: '.env.example', text: envExample(answers) },
    {
      name: `${name}.cron`,
      text: `# sluice ${name}: every night at 02:30. Add it to your crontab with
#   (crontab -l 2>/dev/null; cat ${name}.cron) | crontab -
# sluice reads the .env beside the pipeline file itself. The run's JSON summary goes to
# ${name}.last-run.json, its log (JSON lines) to ${name}.log.
30 2 * * * cd ${shellWord(dir)} && ${command} > ${shellWord(join(dir, `${name}.last-run.json`))} 2>> ${shellWord(join(dir, `${name}.log`))}
`.replaceAll('%', '\\%'),
    },
    { name: `sluice-${name}.service`, text: serviceUnit(name, dir, command) },
    {
      name: `sluice-${name}.timer`,
      text: `[Unit]
Description=Run sluice ${name} nightly

[Timer]
OnCalendar=*-*-* 02:30:00
Persistent=true

[Install]
WantedBy=timers.target
`,
    },
  ];
}

function pipelineText(a: InitAnswers): string {
  const credit = CREDIT_TYPE_OF[a.type];
  const credentials =
    a.auth === 'login'
      ? '  email: ${SLUICE_EMAIL}\n  password: ${SLUICE_PASSWORD}\n'
      : '  token: ${SLUICE_API_TOKEN}\n';
  const matched =
    a.found === undefined
      ? ''
      : `   # ${a.found.toLocaleString('en-US')} matched when init counted`;
  return `# ${a.name}: written by sluice init. Every key: docs/pipeline-files.md of sluice.
#   npx sluice validate ${a.name}.yaml   checks it (offline)
#   npx sluice plan ${a.name}.yaml       what a run would buy and cost (free)
#   npx sluice run ${a.name}.yaml        buys and loads; run again, nothing is bought twice
version: 1
name: ${a.name}
source:
  api: ${a.api}
  # From the environment, --env-file, or the .env beside this file (see .env.example);
  # a variable NAME_FILE=/run/secrets/... reads NAME from a mounted secret.
  url: \${SLUICE_API_URL}
${credentials}destination: ${yamlScalar(withoutPassword(a.destination))}   # relative to this file; SLUICE_DESTINATION overrides it
# budget: { ${credit}: 10000/month }   # credits per calendar month (UTC): a job past it is refused
jobs:
  ${a.type}:
    type: ${a.type}
    query: ${yamlScalar(a.query, true)}${matched}
    records: ${a.records}   # each run: a number, or all
    # max_credits: 1000   # refuse the job if it would spend more
    # write: merge        # append | replace | merge (the default: upsert on key, id)
    # incremental: { cursor: dateUpdated }   # later runs buy only what changed since
`;
}

function envExample(a: InitAnswers): string {
  const lines = [
    `# The credentials ${a.name}.yaml reads. Copy this file to .env beside it and fill it in:`,
    '#   cp .env.example .env && chmod 600 .env      (and never commit .env)',
    "# sluice reads .env as Node's --env-file does; a variable set in the environment wins.",
    '# For a mounted secret (Docker, Kubernetes), give NAME_FILE=/run/secrets/... instead of NAME.',
    `SLUICE_API_URL=${a.url ?? ''}`,
    ...(a.auth === 'login' ? ['SLUICE_EMAIL=', 'SLUICE_PASSWORD='] : ['SLUICE_API_TOKEN=']),
  ];
  if (withoutPassword(a.destination) !== a.destination) {
    lines.push(
      '# The database password, in place of the one the destination URL had:',
      'PGPASSWORD=',
    );
  }
  return `${lines.join('\n')}\n`;
}

function serviceUnit(name: string, dir: string, command: string): string {
  return `[Unit]
Description=sluice: ${name} pipeline
After=network-online.target
Wants=network-online.target
# exits 1 and 130 are worth a retry: at most 3 starts an hour (systemd reads these two here, in [Unit])
StartLimitIntervalSec=1h
StartLimitBurst=3

[Service]
Type=oneshot
User=${userInfo().username}
WorkingDirectory=${dir}
# sluice reads the .env beside the pipeline file itself
ExecStart=${command.replaceAll('%', '%%')}
# exits 1 and 130 are worth a retry: try again in 10 minutes; 2, 3 and 4 are not
Restart=on-failure
RestartSec=10min
RestartPreventExitStatus=2 3 4

[Install]
WantedBy=multi-user.target
`;
}

/** A word for sh (and systemd's ExecStart, which quotes alike for these): quoted when needed. */
function shellWord(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replaceAll("'", "'\\''")}'`;
}

/** A YAML scalar: plain when it reads back the same, else single-quoted (`''` for a quote). */
function yamlScalar(value: string, quote = false): string {
  return !quote && /^\w[\w.:/@${}-]*[\w/]$/.test(value)
    ? value
    : `'${value.replaceAll("'", "''")}'`;
}
