// `pmtape archive` refusals that need no server: no archive configured, a bad --date, a day that
// was never compacted, no credentials anywhere in the AWS chain (said plainly, no secret printed).

import t from 'tap';
import { runCliOnce } from '../../selfhost/helpers.js';
import { DAY, compactedDay } from './common.js';

const noAws: NodeJS.ProcessEnv = {
  AWS_ACCESS_KEY_ID: '',
  AWS_SECRET_ACCESS_KEY: '',
  AWS_SESSION_TOKEN: '',
  AWS_PROFILE: '',
  AWS_CONFIG_FILE: '/nonexistent',
  AWS_SHARED_CREDENTIALS_FILE: '/nonexistent',
  AWS_EC2_METADATA_DISABLED: 'true',
  AWS_CONTAINER_CREDENTIALS_FULL_URI: '',
  AWS_CONTAINER_CREDENTIALS_RELATIVE_URI: '',
  AWS_WEB_IDENTITY_TOKEN_FILE: '',
};

t.test('archive commands refuse clearly', async (t) => {
  const dataDir = await compactedDay(t, DAY, 20);
  const none = await runCliOnce(['archive', 'sync', '--data-dir', dataDir], { env: { PMTAPE_ARCHIVE_URL: '' } });
  t.equal(none.code, 2);
  t.match(none.stderr, /no archive configured: set storage\.archive\.url in the config file or PMTAPE_ARCHIVE_URL/);

  const env = { ...noAws, PMTAPE_ARCHIVE_URL: 's3://pmtape-none/x', PMTAPE_ARCHIVE_ENDPOINT: 'http://127.0.0.1:9' };
  const badDate = await runCliOnce(['archive', 'verify', '--date', '2026-02-30', '--data-dir', dataDir], { env });
  t.equal(badDate.code, 2);
  t.match(badDate.stderr, /--date must be a UTC day like 2026-07-26, got "2026-02-30"/);

  const notCompacted = await runCliOnce(['archive', 'sync', '--date', '2020-01-01', '--data-dir', dataDir], { env });
  t.equal(notCompacted.code, 1);
  t.match(notCompacted.stderr, /2020-01-01 has no compacted partition in this data dir: run `pmtape compact --date 2020-01-01` first/);

  const badUrl = await runCliOnce(['archive', 'sync', '--data-dir', dataDir], { env: { ...env, PMTAPE_ARCHIVE_URL: 'https://bucket' } });
  t.equal(badUrl.code, 1);
  t.match(badUrl.stderr, /PMTAPE_ARCHIVE_URL must look like s3:\/\/<bucket>\/<prefix>/);

  const noCreds = await runCliOnce(['archive', 'sync', '--data-dir', dataDir], { env, timeoutMs: 120_000 });
  t.equal(noCreds.code, 1, noCreds.stderr);
  t.match(noCreds.stderr, /archive s3:\/\/pmtape-none\/x: no credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE/);
  t.notMatch(noCreds.stderr, /at .*\.js:\d+/, 'no stack trace');
});
