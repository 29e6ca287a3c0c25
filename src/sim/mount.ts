// What a sim mount is and what it is given: the contract between `startSim` (server.ts) and each
// emulated kind (coin-venue, yesno, wallet, ...). It lives apart from the server so the mounts do not
// import the module that imports them.

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { WebSocket } from 'ws';
import type { FaultDice, Faults } from './faults.js';

export interface SimOptions {
  readonly port?: number;
  readonly host?: string;
  readonly seed?: number;
  /** A `--faults` spec or parsed faults. */
  readonly faults?: string | Faults;
  /** Shrinks 5m/15m windows (0.02 → 6 s / 18 s). */
  readonly windowScale?: number;
  /** A captured message file served instead of generated books (clob). */
  readonly replay?: string;
  /** Replay pace: 1 = as recorded, 10 = ten times faster, 0 = as fast as possible. */
  readonly replaySpeed?: number;
  /** Generated book changes per second over all markets (clob). */
  readonly rate?: number;
  readonly coins?: readonly string[];
  /** Coins the catalogue lists (and the clob streams) that the written recorder config leaves
   *  out, so only coin discovery (`"coins": "all"`) records them. Default `["sol"]`. */
  readonly unlistedCoins?: readonly string[];
  readonly windows?: readonly string[];
  /** The emulators' clock (epoch ms; default `Date.now`). Tests shift it, e.g. to sit mid-window
   *  so that no market rolls over while they run, however slow the machine is. */
  readonly now?: () => number;
}

/** What every mount gets: the options, its own seeded dice, and the shared clock. */
export interface SimContext {
  readonly opts: SimOptions;
  readonly seed: number;
  readonly faults: Faults;
  readonly windowScale: number;
  /** The shared clock (`opts.now` or `Date.now`). */
  readonly now: () => number;
  /** A fresh PRNG for a named component (same seed → same run). */
  random(name: string): () => number;
  dice(name: string): FaultDice;
}

export interface SimMount {
  /** Path prefix, e.g. `/clob`. Requests below it are routed here with the prefix removed. */
  readonly prefix: string;
  /** Handles one HTTP request; return false for 404. */
  http?(req: IncomingMessage, res: ServerResponse, path: string, url: URL): boolean | Promise<boolean>;
  /** Takes an upgraded WebSocket (path without prefix). */
  ws?(ws: WebSocket, req: IncomingMessage, path: string): void;
  /** Recorder config entries this mount contributes (`upstreams.<kind>`), given the base URL. */
  config?(baseUrl: string): { readonly upstreams?: Record<string, unknown>; readonly [k: string]: unknown };
  /** Skip the server's HTTP faults for this mount. */
  readonly noHttpFaults?: boolean;
  close?(): void;
}

export type SimMountFactory = (ctx: SimContext) => SimMount[];

/** JSON response helper shared by mounts. */
export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}
