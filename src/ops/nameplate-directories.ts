// Which nameplate directories (pairing/nameplate-directory.ts) a `pair invite` claims its
// nameplate in, and a `pair join` looks a nameplate up in. Today none: `pair join CODE --addr
// HOST:PORT` is the way to reach the inviter. LAN discovery and the rendezvous (src/reach/) add
// theirs here once merged; see ARCHITECTURE.md "Pairing by short code" for the wiring.
import type { Identity } from '../crypto/identity.js';
import type { Logger } from '../logger.js';
import type { NodeConfig } from '../home/config.js';
import type { HomeLayout } from '../home/home.js';
import type { NameplateDirectory } from '../pairing/nameplate-directory.js';

export interface DirectoryContext {
  readonly home: HomeLayout;
  readonly identity: Identity;
  readonly config: NodeConfig;
  readonly log: Logger;
}

/** The directories an inviter claims its nameplate in (each claim must succeed, or another nameplate is picked). */
export function inviteDirectories(ctx: DirectoryContext): NameplateDirectory[] {
  void ctx;
  return [];
}

/** The directories a joiner looks a nameplate up in, when no --addr was given. */
export function joinDirectories(ctx: DirectoryContext): NameplateDirectory[] {
  void ctx;
  return [];
}
