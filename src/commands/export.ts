// `pmtape export tardis --date D --out DIR`: every Tardis-format file of a compacted day, written
// locally under the names the tardis-dev clients give them (`<exchange>_<data_type>_<day>_<SYMBOL>.csv.gz`),
// the same bytes `GET /v1/<exchange>/<data_type>/<YYYY>/<MM>/<DD>/<SYMBOL>.csv.gz` serves. Each file is
// written beside its final name and renamed when whole, so a killed export leaves no truncated file.

import { createWriteStream } from 'node:fs';
import { mkdir, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { Command } from 'commander';
import { DESCRIPTORS } from '../families/registry.js';
import { dayStartMs } from '../schema/time.js';
import { TARDIS_DATA_TYPES, tardisFile, tardisMarkets, tardisSymbols, type TardisDataType, type TardisRequest } from '../storage/index.js';
import { EXCHANGES, tardisFileName } from '../api/tardis/exchanges.js';
import { commonOptions, configFrom, progress } from './common.js';

interface ExportOptions {
  date?: string;
  out?: string;
  exchange?: string;
  dataTypes?: string;
  dataDir?: string;
  config?: string;
}

function fail(msg: string): void {
  process.stderr.write(`pmtape export tardis: ${msg}\n`);
  process.exitCode = 2;
}

export function register(program: Command): void {
  const exp = program.command('export').description("write datasets in other tools' formats");
  commonOptions(
    exp
      .command('tardis')
      .description('write a compacted day as Tardis-format CSV files (what the tardis-dev clients download), one per symbol and data type')
      .requiredOption('--date <day>', 'the compacted UTC day (YYYY-MM-DD)')
      .requiredOption('--out <dir>', 'folder to write into (created if missing)')
      .option('--exchange <name>', `only this exchange (${EXCHANGES.join(', ')})`)
      .option('--data-types <list>', `comma-separated (${TARDIS_DATA_TYPES.join(', ')})`, TARDIS_DATA_TYPES.join(',')),
  ).action(async (opts: ExportOptions) => {
    const day = opts.date!;
    if (dayStartMs(day) === null) return fail(`--date must be a UTC day like 2026-07-26, got "${day}"`);
    if (opts.exchange !== undefined && !EXCHANGES.includes(opts.exchange))
      return fail(`--exchange must be one of ${EXCHANGES.join(', ')}, got "${opts.exchange}"`);
    const types = opts
      .dataTypes!.split(',')
      .map((s) => s.trim())
      .filter(Boolean);
    const bad = types.find((x) => !(TARDIS_DATA_TYPES as readonly string[]).includes(x));
    if (bad !== undefined || types.length === 0)
      return fail(`--data-types takes a comma-separated list of ${TARDIS_DATA_TYPES.join(', ')}, got "${opts.dataTypes}"`);
    const cfg = configFrom(opts);
    const out = opts.out!;
    const jobs: TardisRequest[] = [];
    let compacted = 0;
    for (const d of DESCRIPTORS) {
      if (opts.exchange !== undefined && d.tardisExchange !== opts.exchange) continue;
      const markets = await tardisMarkets(cfg.dataDir, d.family, day);
      if (markets === null) continue;
      compacted++;
      for (const market of markets) {
        for (const s of await tardisSymbols(cfg.dataDir, d.family, day, market)) {
          for (const dataType of types as TardisDataType[])
            jobs.push({ family: d.family, day, market, view: s.view, dataType, exchange: d.tardisExchange, symbol: s.symbol });
        }
      }
    }
    if (compacted === 0) return fail(`${day} is not compacted in ${cfg.dataDir} (run \`pmtape compact --date ${day}\` first)`);
    await mkdir(out, { recursive: true });
    const bar = progress('export tardis', jobs.length);
    for (const j of jobs) {
      const name = join(out, tardisFileName(j.exchange, j.dataType, day, j.symbol));
      const tmp = `${name}.partial`;
      try {
        await pipeline(tardisFile(cfg.dataDir, j), createWriteStream(tmp));
        await rename(tmp, name);
      } catch (e) {
        bar.done();
        await rm(tmp, { force: true });
        process.stderr.write(`pmtape export tardis: ${name}: ${(e as Error).message}\n`);
        process.exitCode = 1;
        return;
      }
      bar.tick(1, j.symbol);
    }
    bar.done(`${jobs.length} file(s) in ${out}`);
  });
}
