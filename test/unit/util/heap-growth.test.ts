import { strict as assert } from 'node:assert';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';

/**
 * A process capped as bin/sluice.js caps it keeps 20 MB live and churns 400 MB of buffers and
 * small objects, as a DuckDB run's fetches do; its full collections, counted. `mode`: `off`
 * (no growHeap), `library` (growHeap without allowHeapGrowth: a no-op), `cli` (both), `released`
 * (both, released before the churn).
 */
function fullCollections(mode: 'off' | 'library' | 'cli' | 'released'): number {
  const module = new URL('../../../src/util/heap-growth.ts', import.meta.url).href;
  const script = `
    import { PerformanceObserver, constants } from 'node:perf_hooks';
    const { allowHeapGrowth, growHeap } = await import(${JSON.stringify(module)});
    const mode = ${JSON.stringify(mode)};
    if (mode === 'cli' || mode === 'released') allowHeapGrowth();
    const release = mode === 'off' ? () => {} : growHeap();
    if (mode === 'released') release();
    let major = 0;
    new PerformanceObserver((list) => {
      for (const e of list.getEntries()) if (e.detail.kind === constants.NODE_PERFORMANCE_GC_MAJOR) major++;
    }).observe({ entryTypes: ['gc'] });
    const live = Array.from({ length: 200000 }, (_, i) => ({ i, s: 'k' + i }));
    let sum = 0;
    for (let i = 0; i < 400; i++) {
      const b = Buffer.allocUnsafe(1 << 20);
      b[0] = i;
      sum += b[0] + Array.from({ length: 2000 }, (_, j) => ({ j })).length;
    }
    await new Promise((r) => setTimeout(r, 50));
    release();
    console.log(JSON.stringify({ major, kept: live.length + (sum > 0 ? 0 : 1) }));
  `;
  const child = spawnSync(
    process.execPath,
    [
      '--import',
      'tsx',
      '--max-old-space-size=192',
      '--max-semi-space-size=4',
      '--input-type=module',
      '-e',
      script,
    ],
    { encoding: 'utf8' },
  );
  assert.equal(child.status, 0, child.stderr);
  const { major, kept } = JSON.parse(child.stdout) as { major: number; kept: number };
  assert.equal(kept, 200_000);
  return major;
}

test('growHeap lets a capped heap grow freer, in the CLI only, until released', () => {
  const off = fullCollections('off');
  // Under the cap, V8 collects fully every 30 MB or so of buffers.
  assert.ok(off >= 4, `without growHeap: ${off} full collections`);
  const cli = fullCollections('cli');
  assert.ok(cli * 3 <= off, `with growHeap: ${cli} full collections, against ${off}`);
  // A library's caller keeps V8's flags; once released, V8's own factor is back.
  for (const mode of ['library', 'released'] as const) {
    const n = fullCollections(mode);
    assert.ok(n * 2 >= off, `${mode}: ${n} full collections, against ${off}`);
  }
});
