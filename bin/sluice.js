#!/usr/bin/env -S MALLOC_ARENA_MAX=1 node --max-old-space-size=192 --max-semi-space-size=4
// The published entry point runs the compiled CLI (built by `npm ci` through `prepare`).
// A bounded heap makes V8 collect early: a run stays under 200 MB whatever the download's size
// (test/bench/load.ts); without it V8 lets garbage grow to hundreds of MB before collecting.
// The semi-space flag bounds every thread's young generation, parse workers' too (V8's flag
// wins over a worker's own limits): at 2 MB, a CSV worker collected every megabyte and spent a
// third of its time there (300,000 records: 30 s against 21 with 4 MB). One malloc arena
// instead of one per thread: a million NDJSON records peaked at 185-190 MB against 206 with
// two arenas, at no cost in speed.
import '../dist/cli/main.js';
