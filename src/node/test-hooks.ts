// Fault injection for end-to-end tests, read once from the environment. Unset in normal use;
// each hook only makes a transfer slower or broken, never less safe for the receiver.
function envInt(name: string): number | undefined {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return undefined;
  const n = Number(raw);
  return Number.isInteger(n) && n >= 0 ? n : undefined;
}

export const TEST_HOOKS = Object.freeze({
  /** Flip one ciphertext byte of the Nth DATA frame this process sends (0-based). */
  tamperDataFrame: envInt('CLAWPEER_TEST_TAMPER_FRAME'),
  /** Sleep this many ms before each DATA frame, so a test can kill a transfer midway. */
  delayPerChunkMs: envInt('CLAWPEER_TEST_DELAY_PER_CHUNK_MS'),
  /** Sleep this many ms before a receiver prepares (a slow destination lock or share rescan). */
  delayPrepareMs: envInt('CLAWPEER_TEST_DELAY_PREPARE_MS'),
  /** How long a push waits for the listener's done after its last chunk (PREPARE_TIMEOUT_MS otherwise). */
  publishTimeoutMs: envInt('CLAWPEER_TEST_PUBLISH_TIMEOUT_MS'),
  /** How long a data stream of a transfer nobody expects is held (data-stream-router.ts). */
  waitingStreamMs: envInt('CLAWPEER_TEST_WAITING_STREAM_MS'),
  /** Free bytes a receiver's disk check sees at most (free-space.ts): a nearly full disk. */
  freeBytes: envInt('CLAWPEER_TEST_FREE_BYTES'),
});
