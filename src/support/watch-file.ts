// Calls `onChange` soon after a file is replaced or edited. Watches the directory (an atomic
// rename gives the file a new inode, which a watch on the file itself would miss) and also
// polls, because fs.watch is not reliable on every file system (network mounts, some VMs).
import { watch, type FSWatcher } from 'node:fs';
import { stat } from 'node:fs/promises';
import path from 'node:path';

const DEBOUNCE_MS = 50;
const POLL_MS = 2_000;

export function watchFile(file: string, onChange: () => void): { close(): void } {
  let debounce: NodeJS.Timeout | undefined;
  let lastSignature = '';
  const fire = (): void => {
    clearTimeout(debounce);
    debounce = setTimeout(onChange, DEBOUNCE_MS);
    debounce.unref();
  };
  let watcher: FSWatcher | undefined;
  try {
    watcher = watch(path.dirname(file), { persistent: false }, (_event, name) => {
      if (name === null || name === path.basename(file)) fire();
    });
    watcher.on('error', () => undefined);
  } catch {
    watcher = undefined; // the poll below still works
  }
  const poll = setInterval(() => {
    stat(file).then(
      (s) => {
        const signature = `${s.ino}:${s.size}:${s.mtimeMs}`;
        if (lastSignature !== '' && signature !== lastSignature) fire();
        lastSignature = signature;
      },
      () => undefined,
    );
  }, POLL_MS);
  poll.unref();
  return {
    close() {
      watcher?.close();
      clearInterval(poll);
      clearTimeout(debounce);
    },
  };
}
