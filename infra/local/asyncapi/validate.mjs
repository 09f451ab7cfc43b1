// Parses and validates an AsyncAPI document with the AsyncAPI parser (infra/local/asyncapi.sh runs it).
// Exit 0 when the document is valid (warnings are printed), 1 on any error diagnostic.
import { readFileSync } from 'node:fs';
import { Parser, fromFile } from '@asyncapi/parser';

const path = process.argv[2];
if (!path) {
  console.error('usage: node validate.mjs FILE');
  process.exit(2);
}
const parser = new Parser();
const { document, diagnostics } = await fromFile(parser, path).parse();
const severities = ['error', 'warning', 'info', 'hint'];
let errors = 0;
for (const d of diagnostics) {
  const where = d.path && d.path.length ? d.path.join('.') : '(document)';
  console.log(`${severities[d.severity] ?? d.severity}: ${where}: ${d.message}`);
  if (d.severity === 0) errors++;
}
if (!document || errors > 0) {
  console.error(`${path}: ${errors} error(s); not a valid AsyncAPI document`);
  process.exit(1);
}
const channels = document.channels().length;
const messages = document.allMessages().length;
console.log(`${path}: valid AsyncAPI ${document.version()} (${channels} channels, ${messages} messages, ${diagnostics.length} diagnostics)`);
