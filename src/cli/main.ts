#!/usr/bin/env node
import { allowHeapGrowth } from '../util/heap-growth.js';
import { main } from './index.js';

// This process's heap is the CLI's to size (bin/sluice.js): a DuckDB load may loosen it.
allowHeapGrowth();
process.exitCode = await main(process.argv.slice(2));
