#!/usr/bin/env -S node --max-old-space-size=192 --max-semi-space-size=2
// The published entry point runs the compiled CLI (built by `npm ci` through `prepare`).
// A bounded heap makes V8 collect early: a run stays under 200 MB whatever the download's size
// (test/bench/load.ts); without it V8 lets garbage grow to hundreds of MB before collecting.
import '../dist/cli/main.js';
