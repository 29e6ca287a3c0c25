// The family registry: exactly the three families, each descriptor complete and consistent (venue
// kinds the recorders know, with importers, a backfill source of its own family, market records that
// match the route's response schema), every family's routes mounted from its descriptor under each
// prefix, answering markets, snapshots and latest on a seeded data dir through the shared code path,
// and the recipe of docs/architecture.md exact: no file outside it names a family.

import t from 'tap';
import { readdirSync, readFileSync, statSync, existsSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DESCRIPTORS, FAMILY_REGISTRY, familyOf } from '../../src/families/registry.js';
import { IMPORTERS, RECORDER_KINDS, VENUES, backfillOf } from '../../src/recorders/venues.js';
import { FAMILIES, type Family } from '../../src/schema/observation.js';
import type { Market } from '../../src/schema/market.js';
import type { ReplayMarket } from '../../src/book/replay-book.js';
import { coinMarket, keysFor, seedAll, testApp, testConfig, tmpDataDir, walletMarket, yesnoMarket } from '../api/helpers.js';

const SAMPLE: Record<Family, Market> = { coin: coinMarket, 'wallet-prediction': walletMarket, 'yesno-exchange': yesnoMarket };

/** A route pattern with its path parameters filled in for the sample market. */
function pathOf(prefix: string, pattern: string, params: Record<string, string>): string {
  return prefix + pattern.replace(/:([a-z_]+)/g, (_m, name: string) => encodeURIComponent(params[name]));
}

t.test('the registry holds exactly the three families, each under its own name', async (t) => {
  t.same(Object.keys(FAMILY_REGISTRY).sort(), [...FAMILIES].sort());
  for (const f of FAMILIES) t.equal(familyOf(f).family, f, `${f} is registered under its own name`);
  t.equal(DESCRIPTORS.length, FAMILIES.length);
});

t.test('every descriptor is complete', async (t) => {
  const config = testConfig(tmpDataDir(t), { series: ['KXBTC15M'] });
  for (const d of DESCRIPTORS) {
    const m = SAMPLE[d.family];
    t.ok(d.plan === 'free' || d.plan === 'paid', `${d.family}: a plan`);
    t.ok(d.kinds.length > 0, `${d.family}: at least one recorder kind`);
    for (const k of d.kinds) {
      t.equal(VENUES[k].kind.kind, k, `${d.family}: the recorders know its kind ${k}`);
      t.equal(IMPORTERS[k], VENUES[k].importer, `${d.family}: kind ${k} has an importer`);
    }
    t.ok(d.kinds.includes(d.catalogue), `${d.family}: its catalogue kind records it`);
    const src = backfillOf(d)(config, 0, () => undefined);
    t.equal(src.family, d.family, `${d.family}: the backfill source lists this family`);
    t.ok(src.names.length > 0 && src.selection.length > 0, `${d.family}: the backfill source has listings and names its selection`);
    t.equal(src.key(m).family, d.family, `${d.family}: backfilled markets go to this family's catalog logs`);
    t.equal(src.key(m).stream, 'catalog');

    const aliases = d.aliases(m).filter((a): a is string => a !== null);
    t.ok(aliases.length > 0, `${d.family}: a market has at least one alias`);
    t.ok(d.keep(m, {}), `${d.family}: an empty filter keeps every market`);
    t.notOk(d.keep(m, { start: Date.parse('2100-01-01T00:00:00Z') }), `${d.family}: a window after the market leaves it out`);

    // The market record is exactly the route's response schema: no field missing, none extra.
    const record = d.marketRecord(m);
    const props = Object.keys((d.routes.schemas.market as { properties: object }).properties).sort();
    t.same(Object.keys(record).sort(), props, `${d.family}: the market record matches its response schema`);

    const model = d.bookModel(m.market_id, m, { includeOrderbook: true });
    t.ok(model, `${d.family}: a book model for a catalogued market`);
    const gap = { type: 'gap', seq: 1, recv_ts: 0, source_ts: null, reason: 'stale', start_ts: 0, end_ts: null } as const;
    t.notOk(model!.candidate(gap), `${d.family}: a gap record never makes a snapshot`);
    t.equal(
      d.bookModel(m.market_id, null, {}) !== null,
      d.booksWithoutCatalog,
      `${d.family}: books without a catalogue entry only where the family serves them`,
    );

    const rm: ReplayMarket = { family: d.family, idField: d.idField, id: m.market_id, market: m, newBook: () => d.replay.book(rm) };
    const replayBook = rm.newBook();
    t.notOk(replayBook.valid(), `${d.family}: a replay book is not valid before its first record`);
    t.equal(replayBook.sample(10), null, `${d.family}: and samples nothing`);
    t.equal(d.replay.idParam === 'ticker', d.idField === 'ticker', `${d.family}: replay lines and parameters name markets alike`);
    t.ok(d.replay.maxDepth >= 1, `${d.family}: a replay depth cap`);

    const r = d.routes;
    t.ok(r.prefixes.length > 0 && r.prefixes.every((p) => p.startsWith('/v3')), `${d.family}: prefixes under /v3`);
    t.match(r.marketPath, new RegExp(`:${r.idParam}$`), `${d.family}: the market path ends in its id parameter`);
    if (r.scope) t.match(r.marketsPath, `:${r.scope.param}`, `${d.family}: the scoped list names its scope`);
    for (const text of Object.values(r.describe)) t.ok(text.length > 10, `${d.family}: every route is described`);
  }
});

t.test('recorder kinds and importer kinds are unique and every required kind is registered', async (t) => {
  const kinds = RECORDER_KINDS.map((k) => k.kind);
  t.equal(new Set(kinds).size, kinds.length, 'no kind is registered twice');
  for (const k of RECORDER_KINDS) for (const r of k.requires ?? []) t.ok(kinds.includes(r), `${k.kind} requires the registered kind ${r}`);
  t.ok(
    RECORDER_KINDS.every((k) => (k.requires ?? []).every((r) => kinds.indexOf(r) < kinds.indexOf(k.kind))),
    'a required kind starts first',
  );
  t.same(Object.keys(IMPORTERS).sort(), [...kinds].sort(), 'one importer per kind');
  t.same(Object.keys(VENUES).sort(), [...kinds].sort(), 'every venue kind records some family');
});

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const sources = (dir: string): string[] =>
  readdirSync(dir).flatMap((n) => (statSync(join(dir, n)).isDirectory() ? sources(join(dir, n)) : n.endsWith('.ts') ? [join(dir, n)] : []));

/** The files docs/architecture.md's recipe names, with `<family>` and `<kind>` filled in for every family and kind. */
function recipeFiles(): string[] {
  const doc = readFileSync(join(REPO, 'docs', 'architecture.md'), 'utf8');
  const recipe = doc.slice(doc.indexOf('### Adding a family'), doc.indexOf('\n## ', doc.indexOf('### Adding a family')));
  const named = [...recipe.matchAll(/`(src\/[^`\s]+)`/g)].map((m) => m[1]);
  return [
    ...new Set(
      named.flatMap((p) => DESCRIPTORS.flatMap((d) => d.kinds.map((k) => p.replaceAll('<family>', d.family).replaceAll('<kind>', k)))),
    ),
  ];
}

/** Code that names a family: compares or sets a `family` to an id, or keys a table by the hyphenated ids. */
function namesAFamily(text: string): boolean {
  const code = text.replace(/\/\*[\s\S]*?\*\/|\/\/.*$/gm, '');
  return FAMILIES.some((f) => {
    const id = f.replace('-', '\\-');
    return new RegExp(`family\\s*[!=]==\\s*'${id}'|'${id}'\\s*[!=]==\\s*[\\w.?]*family\\b|family:\\s*'${id}'|^\\s*'${id}':`, 'm').test(
      code,
    );
  });
}

t.test('the recipe in docs/architecture.md names every file a new family touches', async (t) => {
  const recipe = recipeFiles();
  t.ok(recipe.length > 10, `the recipe names ${recipe.length} files`);
  for (const p of recipe) t.ok(existsSync(join(REPO, p)), `${p} exists`);
  const covered = (file: string): boolean => recipe.some((p) => (p.endsWith('/') ? file.startsWith(p) : file === p));
  const naming = sources(join(REPO, 'src'))
    .map((f) => relative(REPO, f))
    .filter((f) => namesAFamily(readFileSync(join(REPO, f), 'utf8')));
  t.same(
    naming.filter((f) => !covered(f)),
    [],
    'every file that names a family is one the recipe names',
  );
  t.ok(naming.length > 5, `the check finds the files that do (${naming.length})`);
  t.ok(namesAFamily("if (m.family === 'coin') x();"), 'a comparison names a family');
  t.ok(namesAFamily("  'yesno-exchange': [],"), 'a table key names a family');
  t.notOk(namesAFamily("// family === 'coin'"), 'a comment does not');
});

t.test('every family answers markets, snapshots and latest under each of its prefixes', async (t) => {
  const dir = tmpDataDir(t);
  await seedAll(dir);
  const { paid } = await keysFor(dir); // before the app starts, so its key store loads them
  const app = await testApp(t, testConfig(dir));
  const headers = { authorization: `Bearer ${paid}` };
  for (const d of DESCRIPTORS) {
    const m = SAMPLE[d.family];
    const params: Record<string, string> = {
      [d.routes.idParam]: m.market_id,
      ...(d.routes.scope ? { [d.routes.scope.param]: 'btc' } : {}),
    };
    for (const prefix of d.routes.prefixes) {
      const list = await app.inject({ url: pathOf(prefix, d.routes.marketsPath, params), headers });
      t.equal(list.statusCode, 200, `${prefix}${d.routes.marketsPath}`);
      t.same(list.json().data, [JSON.parse(JSON.stringify(d.marketRecord(m)))], `${prefix}: the list shows the descriptor's market record`);
      const snaps = await app.inject({ url: `${pathOf(prefix, d.routes.marketPath, params)}/snapshots?limit=2`, headers });
      t.equal(snaps.statusCode, 200, `${prefix}: snapshots`);
      t.equal(snaps.json().data.length, 2);
      const latest = await app.inject({ url: `${pathOf(prefix, d.routes.marketPath, params)}/orderbook/latest`, headers });
      t.equal(latest.statusCode, 200, `${prefix}: latest`);
      t.equal(latest.json().data.stale, true, `${prefix}: no recorder runs, so the newest book is stale`);
      const unknown = await app.inject({
        url: `${pathOf(prefix, d.routes.marketPath, { ...params, [d.routes.idParam]: 'no-such-market' })}/snapshots`,
        headers,
      });
      t.equal(unknown.statusCode, 404, `${prefix}: an unknown ${d.routes.noun} is 404`);
      t.match(unknown.json().error.message, d.routes.listUrl('btc'), `${prefix}: the 404 points at the family's list`);
    }
  }
});
