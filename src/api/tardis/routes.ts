// `GET /v1/<exchange>/<data_type>/<YYYY>/<MM>/<DD>/<SYMBOL>.csv.gz`: one Tardis-format file of a
// compacted day (docs/tardis.md), the path the tardis-dev clients request from their datasets
// endpoint, authorized by the pmtape key they send as `Authorization: Bearer <key>`. The file is
// streamed gzip from the Parquet as it is read (storage's `tardisFile`); nothing is written to disk.
// No `Content-Encoding` is set: the body is the `.csv.gz` file itself, which clients save as it comes.

import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { invalidParameter, notFound, PmtapeError } from '../../errors.js';
import { dayStartMs } from '../../schema/time.js';
import { findTardisSymbol, TARDIS_DATA_TYPES, tardisFile, tardisMarkets, type TardisDataType } from '../../storage/index.js';
import { errorResponses } from '../route-params.js';
import { EXCHANGES, familyOfExchange } from './exchanges.js';

const FILE = /^([A-Za-z0-9][A-Za-z0-9._-]{0,199})\.csv\.gz$/;

interface Params {
  exchange: string;
  data_type: string;
  year: string;
  month: string;
  day: string;
  file: string;
}

const seg = (description: string): object => ({ type: 'string', minLength: 1, maxLength: 256, description });

export default function tardisRoutes(app: FastifyInstance): void {
  const dataDir = app.pmtape.config.dataDir;
  app.get<{ Params: Params }>(
    '/v1/:exchange/:data_type/:year/:month/:day/:file',
    {
      config: { plan: 'free' },
      schema: {
        description:
          "One Tardis-format CSV file (gzip) of one symbol (a market's outcome book) and one compacted UTC day, as Tardis's " +
          "datasets API serves it: point the tardis-dev clients' datasets endpoint at `<server>/v1`. Exchanges: " +
          `${EXCHANGES.join(', ')}; data types: ${TARDIS_DATA_TYPES.join(', ')}. Columns, symbols and conventions: docs/tardis.md.`,
        params: {
          type: 'object',
          properties: {
            exchange: seg(`one of ${EXCHANGES.join(', ')}`),
            data_type: seg(`one of ${TARDIS_DATA_TYPES.join(', ')}`),
            year: seg('YYYY'),
            month: seg('MM'),
            day: seg('DD'),
            file: seg('`<SYMBOL>.csv.gz`, SYMBOL = `<MARKET>-<OUTCOME>` (any case)'),
          },
          required: ['exchange', 'data_type', 'year', 'month', 'day', 'file'],
        },
        response: {
          200: {
            description: 'the gzip-compressed CSV file',
            content: { 'application/gzip': { schema: { type: 'string', format: 'binary' } } },
          },
          ...errorResponses([400, 401, 403, 404, 429]),
        },
      },
    },
    async (req: FastifyRequest<{ Params: Params }>, reply: FastifyReply) => {
      const p = req.params;
      const d = familyOfExchange(p.exchange);
      if (!d) throw notFound(`Unknown exchange '${p.exchange}': pmtape's Tardis exchanges are ${EXCHANGES.join(', ')}.`);
      if (!(TARDIS_DATA_TYPES as readonly string[]).includes(p.data_type)) {
        throw invalidParameter('data_type', `must be one of ${TARDIS_DATA_TYPES.join(', ')}, got '${p.data_type}'`);
      }
      const day = `${p.year}-${p.month}-${p.day}`;
      if (!/^\d{4}$/.test(p.year) || !/^\d{2}$/.test(p.month) || !/^\d{2}$/.test(p.day) || dayStartMs(day) === null) {
        throw invalidParameter('date', `must be a UTC day as /YYYY/MM/DD/, got '/${p.year}/${p.month}/${p.day}/'`);
      }
      const m = FILE.exec(p.file);
      if (!m) throw invalidParameter('symbol', 'must be `<SYMBOL>.csv.gz` with SYMBOL of letters, digits, `.`, `_` and `-` (at most 200)');
      if (d.plan === 'paid' && req.apiKey?.plan !== 'paid') {
        throw new PmtapeError(
          'plan_required',
          `${p.exchange} files need the paid plan; the key "${req.apiKey?.name ?? ''}" is on the ${req.apiKey?.plan ?? 'free'} plan.`,
        );
      }
      const markets = await tardisMarkets(dataDir, d.family, day);
      if (markets === null)
        throw notFound(`${day} is not compacted for ${p.exchange} (days are served once \`pmtape compact\` has written them).`);
      const s = await findTardisSymbol(dataDir, d.family, day, m[1], markets);
      if (!s)
        throw notFound(`No symbol '${m[1].toUpperCase()}' on ${p.exchange} on ${day}: symbols are <MARKET>-<OUTCOME> (docs/tardis.md).`);
      const body = tardisFile(dataDir, {
        family: d.family,
        day,
        market: s.market,
        view: s.view,
        dataType: p.data_type as TardisDataType,
        exchange: p.exchange,
        symbol: s.symbol,
      });
      body.on('error', (err) => app.pmtape.log.error({ err, request_id: req.id }, 'tardis file failed mid-stream'));
      return reply.type('application/gzip').header('cache-control', 'no-store').send(body);
    },
  );
}
