// Caps on the connections one `serve` holds, so that a flood of connections that never finish a
// request (half-open: `GET / HTTP/1.1\r\nHost: x\r\n` and then nothing) cannot take every file
// descriptor of the process: before this, 21,000 of them left /healthz and every keyed route
// refused for a minute and more.
//
// Two caps (config `server`, src/config.ts): connections in all and per client address. A new
// connection past either closes the OLDEST IDLE connection of the same scope to make room (a
// flood from one address so closes its own earlier sockets, never another client's); when every
// connection of the scope is busy the new one is closed instead. Idle means no answer is being
// written on it: a socket that sent nothing, one whose headers never finished, a keep-alive
// connection between requests. A connection upgraded to the live stream is busy for good (the
// stream plugin has its own limits). Requests whose headers never finish are also closed by Node's
// `headersTimeout`, checked every second instead of Node's default thirty.
//
// Busy is read from the socket's current response (Node sets `socket._httpMessage` while an
// answer is written on it and clears it when the answer is finished), so the guard adds nothing
// per request: its work is one map insert and one listener per connection.

import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import type { ServerLimits } from '../config.js';

/** How often Node checks for requests past `headersTimeout` (its default is 30 s). */
const CHECK_INTERVAL_MS = 1000;

export interface GuardCounts {
  /** Connections open now. */
  readonly open: number;
  /** Idle connections closed to make room for a new one. */
  readonly shed: number;
  /** New connections closed at once (every connection of their scope was busy). */
  readonly refused: number;
  /** Open connections of the busiest client address. */
  readonly maxPerAddress: number;
}

export class ConnectionGuard {
  /** Every open connection, oldest first (a Map keeps insertion order). */
  private readonly all = new Map<Socket, string>();
  private readonly byAddress = new Map<string, Set<Socket>>();
  private readonly upgraded = new WeakSet<Socket>();
  private shed = 0;
  private refused = 0;

  constructor(
    private readonly limits: Pick<ServerLimits, 'maxConnections' | 'maxConnectionsPerAddress' | 'headersTimeoutMs'>,
    private readonly onShed?: (what: 'shed' | 'refused', address: string) => void,
  ) {}

  /** Guards `server` (before it listens). */
  attach(server: Server): void {
    server.headersTimeout = this.limits.headersTimeoutMs;
    // Node requires requestTimeout ≥ headersTimeout when it is set; 0 (Fastify's default) is off.
    if (server.requestTimeout > 0 && server.requestTimeout < server.headersTimeout) server.requestTimeout = server.headersTimeout;
    (server as Server & { connectionsCheckingInterval: number }).connectionsCheckingInterval = Math.min(
      CHECK_INTERVAL_MS,
      this.limits.headersTimeoutMs,
    );
    server.on('connection', (s: Socket) => this.admit(s));
    server.on('upgrade', (req: { socket: Socket }) => this.upgraded.add(req.socket));
  }

  counts(): GuardCounts {
    let most = 0;
    for (const set of this.byAddress.values()) most = Math.max(most, set.size);
    return { open: this.all.size, shed: this.shed, refused: this.refused, maxPerAddress: most };
  }

  private idle(s: Socket): boolean {
    return (s as Socket & { _httpMessage?: unknown })._httpMessage == null && !this.upgraded.has(s) && !s.destroyed;
  }

  /** Closes the oldest idle connection of `scope`; false when none is idle. */
  private shedOldest(scope: Iterable<Socket>, address: string): boolean {
    for (const s of scope) {
      if (!this.idle(s)) continue;
      this.forget(s);
      s.destroy();
      this.shed++;
      this.onShed?.('shed', address);
      return true;
    }
    return false;
  }

  private admit(s: Socket): void {
    const address = s.remoteAddress ?? '';
    let own = this.byAddress.get(address);
    const room =
      (!own || own.size < this.limits.maxConnectionsPerAddress || this.shedOldest(own, address)) &&
      (this.all.size < this.limits.maxConnections || this.shedOldest(this.all.keys(), address));
    if (!room) {
      this.refused++;
      this.onShed?.('refused', address);
      s.destroy();
      return;
    }
    if (!own) this.byAddress.set(address, (own = new Set()));
    own.add(s);
    this.all.set(s, address);
    s.once('close', () => this.forget(s));
  }

  private forget(s: Socket): void {
    const address = this.all.get(s);
    if (address === undefined) return;
    this.all.delete(s);
    const own = this.byAddress.get(address);
    own?.delete(s);
    if (own?.size === 0) this.byAddress.delete(address);
  }
}
