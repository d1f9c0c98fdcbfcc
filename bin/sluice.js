#!/usr/bin/env node
// The published entry point runs the compiled CLI (built by `npm ci` through `prepare`).
import '../dist/cli/main.js';
