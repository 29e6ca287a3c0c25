// Tardis `exchange` names ↔ pmtape families (each descriptor's `tardisExchange`), and the file names
// the tardis-dev clients give a download by default (`<exchange>_<data_type>_<YYYY-MM-DD>_<SYMBOL>.csv.gz`),
// which `pmtape export tardis` writes too, so a folder it writes is what `downloadDatasets` would.

import { DESCRIPTORS, type FamilyDescriptor } from '../../families/registry.js';
import type { TardisDataType } from '../../storage/index.js';

/** The family whose files `exchange` names, or undefined. */
export const familyOfExchange = (exchange: string): FamilyDescriptor | undefined => DESCRIPTORS.find((d) => d.tardisExchange === exchange);

/** Every exchange name, for messages. */
export const EXCHANGES: readonly string[] = DESCRIPTORS.map((d) => d.tardisExchange);

/** The clients' default file name of one download. */
export const tardisFileName = (exchange: string, dataType: TardisDataType, day: string, symbol: string): string =>
  `${exchange}_${dataType}_${day}_${symbol}.csv.gz`;
