// Which ways a sync's changes may travel, as a mode: what a sync asks for and what the folder it
// runs in allows, combined. A receive-only folder never sends its local changes and a send-only
// one never takes a peer's, whoever starts the sync and whatever mode it asks for.
import type { SyncModeName } from '../protocol/messages.js';

/** The mode that moves only what both `asked` and `allowed` move; undefined when that is nothing. */
export function modeWithin(asked: SyncModeName, allowed: SyncModeName): SyncModeName | undefined {
  const sends = asked !== 'receive-only' && allowed !== 'receive-only';
  const receives = asked !== 'send-only' && allowed !== 'send-only';
  return sends && receives ? 'two-way' : sends ? 'send-only' : receives ? 'receive-only' : undefined;
}
