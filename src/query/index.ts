export { checkQuery } from './lint.js';
