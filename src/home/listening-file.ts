// Where this home's listener listens, for commands of the same home that want to say it
// (`pair invite` prints the exact `pair join ... --addr`): `listening.json` in the home, written
// by the listener that owns the home's control socket once it is ready, removed when it stops.
// A file left by a killed listener names a pid that is gone, and is not believed.
import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { writeFileAtomic } from '../support/atomic-file.js';
import { processAlive } from '../support/process-alive.js';

export interface ListeningInfo {
  readonly pid: number;
  readonly host: string;
  readonly port: number;
}

const FILE_NAME = 'listening.json';

export async function writeListening(homeDir: string, info: ListeningInfo): Promise<void> {
  await writeFileAtomic(join(homeDir, FILE_NAME), JSON.stringify(info) + '\n', 0o600);
}

/** Removes the file if it is this process's (another listener of the home may have written it since). */
export async function removeListening(homeDir: string, pid = process.pid): Promise<void> {
  if ((await readListening(homeDir, () => true))?.pid === pid) await rm(join(homeDir, FILE_NAME), { force: true });
}

/** The home's running listener, or undefined (no file, a malformed one, or its process is gone). */
export async function readListening(
  homeDir: string,
  alive: (pid: number) => boolean = processAlive,
): Promise<ListeningInfo | undefined> {
  let parsed: Partial<ListeningInfo> | null;
  try {
    parsed = JSON.parse(await readFile(join(homeDir, FILE_NAME), 'utf8')) as Partial<ListeningInfo> | null;
  } catch {
    return undefined;
  }
  const { pid, host, port } = parsed ?? {};
  if (typeof pid !== 'number' || typeof host !== 'string' || typeof port !== 'number' || !alive(pid)) return undefined;
  return { pid, host, port };
}
