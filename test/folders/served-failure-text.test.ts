// Which failures of a sync a peer ran here are this side's (shown in the folder's status at
// once) and which are not (the peer gone, the folder busy, the peer's own error, a refusal that
// only narrows the peer's mode).
import t from 'tap';
import { ClawpeerError, errorFromWire } from '../../src/errors.js';
import { CHANGED_WHILE_SENT } from '../../src/exchange/chunk-reader.js';
import { RECEIVE_ONLY_REFUSAL } from '../../src/folder-sync/sync-service.js';
import { servedFailureText } from '../../src/folders/sync-outcome-text.js';

const errno = (code: string, message: string): NodeJS.ErrnoException => Object.assign(new Error(message), { code });

t.test("this side's failures are told, with their message", async (t) => {
  const ours = [
    new ClawpeerError('IO', 'cannot create /f/.clawpeer/sync.lock: the file system is read-only'),
    new ClawpeerError('IO', 'cannot write the revision log in /f: the disk is full'),
    new ClawpeerError('BUDGET_EXCEEDED', 'the manifest budget is exceeded'),
    new ClawpeerError('SHARE_FORBIDDEN', 'share docs refuses --fsync=none'),
    errno('EROFS', "EROFS: read-only file system, open '/f/a'"),
    errno('ENOSPC', "ENOSPC: no space left on device, write '/f/a'"),
  ];
  for (const err of ours)
    t.equal(servedFailureText(err), `a sync the peer ran here failed: ${err.message}`, err.message);
});

t.test('failures that are not this side are not', async (t) => {
  const not = [
    new ClawpeerError('CONNECTION_CLOSED', 'node x closed the connection'),
    new ClawpeerError('TIMEOUT', 'waiting for data on data stream 8 timed out after 3000 ms'),
    new ClawpeerError('ABORTED', 'a sync from node x was superseded by a sync from node x'),
    new ClawpeerError('FOLDER_BUSY', '/f is busy'),
    new ClawpeerError('REMOTE', 'stream reset by peer'),
    new ClawpeerError('PROTOCOL', 'expected sync-fetch, got ping'),
    new ClawpeerError('SHARE_READ_ONLY', 'share docs is read-only: only receive-only syncs are served'),
    new ClawpeerError('SHARE_FORBIDDEN', `${RECEIVE_ONLY_REFUSAL} (folder docs)`),
    // A file here edited while the peer fetched it: its own sync follows, nothing is broken here.
    new ClawpeerError(
      'IO',
      `/f/a.bin ${CHANGED_WHILE_SENT} (bytes 0..88074 differ from when it was hashed); run the command again to send the new content`,
    ),
    errorFromWire(13, 'cannot write docs/a: the disk is full'), // the peer's disk, not ours
    errno('ECONNRESET', 'read ECONNRESET'),
    new TypeError('a bug'),
  ];
  for (const err of not) t.equal(servedFailureText(err), undefined, err.message);
});
