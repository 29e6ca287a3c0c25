// The family registry: one descriptor per venue family, looked up by the recorder host, the import
// and backfill commands, the catalogue index, the REST routes and the stream. Adding a family is one
// descriptor file and one line here (and its name in `Family`).

import type { Family } from '../schema/observation.js';
import type { RecorderKind } from '../recorders/recorder.js';
import type { Importer } from '../recorders/importer.js';
import type { FamilyDescriptor } from './descriptor.js';
import { coinFamily } from './coin/family.js';
import { walletFamily } from './wallet-prediction/family.js';
import { yesnoFamily } from './yesno-exchange/family.js';

export type { FamilyDescriptor } from './descriptor.js';

/** Every family by name; `satisfies` makes a missing or extra family a compile error. */
export const FAMILY_REGISTRY = {
  coin: coinFamily,
  'yesno-exchange': yesnoFamily,
  'wallet-prediction': walletFamily,
} as const satisfies Record<Family, FamilyDescriptor>;

export const familyOf = (family: Family): FamilyDescriptor => FAMILY_REGISTRY[family];

/** Descriptors in the registry's order (the recorder kinds start in this order). */
export const DESCRIPTORS: readonly FamilyDescriptor[] = Object.values(FAMILY_REGISTRY);

/** Every recorder kind, in start order. */
export const RECORDER_KINDS: readonly RecorderKind[] = DESCRIPTORS.flatMap((d) => d.kinds);

/** `pmtape import --kind K` importers by kind. */
export const IMPORTERS: Readonly<Record<string, Importer>> = Object.fromEntries(DESCRIPTORS.flatMap((d) => d.importers.map((i) => [i.kind, i])));
