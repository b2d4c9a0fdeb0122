// What the command line uses of a home: its layout, this node's identity, the pairs, the node
// config and the home's reach config, addresses, and what a running listener left behind
// (listening.json, paths.json). Re-exports only: the modules stay the owners. Pairing by invite
// or code is ops/pairing.ts.
export { resolveHome, type HomeLayout } from './home.js';
export { createIdentity, homeOrEphemeralIdentity, identityExists, loadIdentity } from './identity-store.js';
export { findPeer, PeerStore, validatePeerName } from './peer-store.js';
export { resolvePeer, type ResolvedPeer } from './peer-resolve.js';
export {
  CONFIG_LIMITS,
  DEFAULT_CONFIG,
  DEFAULT_LISTEN_PORT,
  keepAliveFor,
  resolveConfig,
  type CompressionChoice,
  type NodeConfig,
} from './config.js';
export { loadReachConfig, type ReachConfig } from './config-file.js';
export { formatHostPort, parseHostPort } from './address.js';
export { readListening, type ListeningInfo } from './listening-file.js';
export { readLastPaths } from './last-paths.js';
export type { HostPort } from '../transport/types.js';
