// The family registry: one descriptor per venue family, looked up by the recorders (their kinds,
// importers and backfill, through src/recorders/venues.ts), the catalogue index, the REST routes, the
// replay and the stream. Adding a family is one folder and one line here; docs/architecture.md has
// the whole recipe.

import type { Family } from '../schema/observation.js';
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
