// The recorders' own table of venue kinds: each name a family descriptor may list in `kinds` (or name
// as its `catalogue`) is a feed, the importer of its captured messages, and, for a kind whose REST
// lists markets, the backfill source of that listing. The families sit below the recorders: they name
// kinds, and the recorder host, `pmtape import` and `pmtape backfill` look the kinds up here.

import type { FamilyDescriptor, VenueKind } from '../families/descriptor.js';
import { DESCRIPTORS } from '../families/registry.js';
import { catalogKind } from './catalog/feed.js';
import { catalogImporter } from './catalog/import.js';
import { clobKind } from './clob/feed.js';
import { clobImporter } from './clob/import.js';
import { walletKind } from './wallet/feed.js';
import { walletImporter } from './wallet/import.js';
import { yesnoKind } from './yesno/feed.js';
import { yesnoImporter } from './yesno/import.js';
import { coinSource, walletSource, yesnoSource, type SourceFactory } from './backfill-sources.js';
import type { Importer } from './importer.js';
import type { RecorderKind } from './recorder.js';

export interface Venue {
  readonly kind: RecorderKind;
  readonly importer: Importer;
  /** The upstream catalogue listing, where this kind's REST lists markets. */
  readonly backfill?: SourceFactory;
}

/** Every venue kind by name; `satisfies` makes a kind missing here a compile error. */
export const VENUES = {
  clob: { kind: clobKind, importer: clobImporter },
  catalog: { kind: catalogKind, importer: catalogImporter, backfill: coinSource },
  yesno: { kind: yesnoKind, importer: yesnoImporter, backfill: yesnoSource },
  wallet: { kind: walletKind, importer: walletImporter, backfill: walletSource },
} as const satisfies Record<VenueKind, Venue>;

const venue = (k: VenueKind): Venue => VENUES[k];

/** Every recorder kind, in the registry's order of families and each family's start order. */
export const RECORDER_KINDS: readonly RecorderKind[] = DESCRIPTORS.flatMap((d) => d.kinds.map((k) => venue(k).kind));

/** `pmtape import --kind K` importers by kind, in the table's order. */
export const IMPORTERS: Readonly<Record<string, Importer>> = Object.fromEntries(
  Object.values(VENUES).map((v: Venue) => [v.importer.kind, v.importer]),
);

/** The catalogue listing `pmtape backfill catalog --family F` pages through. */
export function backfillOf(d: FamilyDescriptor): SourceFactory {
  const src = venue(d.catalogue).backfill;
  if (!src) throw new Error(`family ${d.family}: its catalogue kind "${d.catalogue}" has no backfill source`);
  return src;
}
