import { overview } from './data.js';
import { page } from './html.js';
import { overviewBody } from './pages.js';
import type { Source } from './sources.js';

/**
 * `sluice report`: the dashboard's overview as one HTML file that needs nothing else (its style
 * and script are inline, no link leaves it), for a cron job to mail or publish.
 */
export async function overviewReport(source: Source, now: number): Promise<string> {
  const dest = await source.open();
  try {
    const o = await overview(source, dest, now);
    return page(
      {
        title: `Overview at ${new Date(now).toISOString().replace('T', ' ').slice(0, 16)} UTC`,
        destination: dest.description,
      },
      overviewBody(o, () => undefined),
    );
  } finally {
    await dest.close();
  }
}
