// Writes dist/cli.js, the documented entry point (`node dist/cli.js <command>`), which loads the
// compiled CLI. tsc compiles src/, tools/ and test/ together (rootDir "."), so src/cli.ts lands at
// dist/src/cli.js; this keeps the public path stable without splitting the build in two.
import { writeFileSync, chmodSync } from 'node:fs';
writeFileSync('dist/cli.js', '#!/usr/bin/env node\nimport "./src/cli.js";\n');
chmodSync('dist/cli.js', 0o755);
