// The readers' index cache bound comes from config (PMTAPE_INDEX_CACHE_BYTES is read in config.ts
// only) and is handed to storage; garbage is a clear config error, not a NaN cache.

import t from 'tap';
import { loadConfig } from '../../src/config.js';
import { applyConfig } from '../../src/commands/common.js';
import { indexCacheBytes } from '../../src/storage/testing.js';

t.test('PMTAPE_INDEX_CACHE_BYTES reaches the segment cache through config', async (t) => {
  t.equal(loadConfig({}, {}).storage.indexCacheBytes, 64 * 1024 * 1024, 'default 64 MiB');
  const cfg = loadConfig({}, { PMTAPE_INDEX_CACHE_BYTES: String(8 * 1024 * 1024) });
  t.equal(cfg.storage.indexCacheBytes, 8 * 1024 * 1024);
  applyConfig(cfg);
  t.equal(indexCacheBytes(), 8 * 1024 * 1024);
  applyConfig(loadConfig({}, { PMTAPE_INDEX_CACHE_BYTES: '10' }));
  t.equal(indexCacheBytes(), 1024 * 1024, 'at least 1 MiB');
  t.throws(() => loadConfig({}, { PMTAPE_INDEX_CACHE_BYTES: 'lots' }), /PMTAPE_INDEX_CACHE_BYTES/);
});
