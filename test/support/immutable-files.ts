// Immutable files and directories (chattr +i): how tests make chmod, utimes, creating, renaming
// and deleting fail with EPERM, even for root (CI runs as root). Elsewhere such tests skip.
import { execFileSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export function chattr(flag: '+i' | '-i', file: string): void {
  execFileSync('chattr', [flag, file], { stdio: 'pipe' });
}

/** Why this machine cannot make a file immutable (the skip reason), or undefined when it can. */
export async function immutableUnavailable(): Promise<string | undefined> {
  if (process.getuid?.() !== 0) return 'needs root: an immutable file (chattr +i) is how the test makes EPERM';
  const dir = await mkdtemp(join(tmpdir(), 'clawpeer-chattr-'));
  const probe = join(dir, 'probe');
  await writeFile(probe, '');
  try {
    chattr('+i', probe);
    chattr('-i', probe);
    return undefined;
  } catch (err) {
    return `chattr +i failed here (${(err as Error).message.split('\n')[0] ?? ''})`;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** Makes paths immutable one by one and undoes them all at once (again at the test's teardown). */
export class ImmutableLocks {
  readonly #locked: string[] = [];

  constructor(t: { teardown(fn: () => void): void }) {
    t.teardown(() => this.unlockAll());
  }

  lock(path: string): void {
    chattr('+i', path);
    this.#locked.push(path);
  }

  unlockAll(): void {
    for (const path of this.#locked.splice(0)) chattr('-i', path);
  }
}
