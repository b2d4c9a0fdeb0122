// Where a node keeps its state: identity key, paired peers, default inbox share.
// --home beats $CLAWPEER_HOME beats the platform's config dir.
import { stat } from 'node:fs/promises';
import { homedir, platform } from 'node:os';
import { join, resolve } from 'node:path';
import { ClawpeerError } from '../errors.js';

export interface HomeLayout {
  readonly dir: string;
  readonly identityKeyFile: string;
  readonly peersFile: string;
  /** Open pairing invites (pair-invite.ts), one file each, mode 0600: they hold secrets. */
  readonly invitesDir: string;
  readonly inboxDir: string;
}

export function defaultHomeDir(env: NodeJS.ProcessEnv = process.env): string {
  switch (platform()) {
    case 'darwin':
      return join(homedir(), 'Library', 'Application Support', 'clawpeer');
    case 'win32':
      return join(env['APPDATA'] ?? join(homedir(), 'AppData', 'Roaming'), 'clawpeer');
    default:
      return join(env['XDG_CONFIG_HOME'] ?? join(homedir(), '.config'), 'clawpeer');
  }
}

export function resolveHome(option: string | undefined, env: NodeJS.ProcessEnv = process.env): HomeLayout {
  const dir = resolve(option ?? env['CLAWPEER_HOME'] ?? defaultHomeDir(env));
  return {
    dir,
    identityKeyFile: join(dir, 'identity.key'),
    peersFile: join(dir, 'peers.json'),
    invitesDir: join(dir, 'invites'),
    inboxDir: join(dir, 'inbox'),
  };
}

/**
 * Refuses a home another local user could tamper with, as ssh refuses such a ~/.ssh: one that
 * is writable by group or others (they could plant a symlink where a key is about to be written,
 * or a peers.json that pins their key) or owned by another user. A home not made yet is fine
 * (it is made 0700). Throws HOME_INSECURE saying how to fix it. No check on Windows (ACLs).
 */
export async function assertPrivateHome(dir: string, what = 'home'): Promise<void> {
  if (process.platform === 'win32' || typeof process.getuid !== 'function') return;
  let st;
  try {
    st = await stat(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw new ClawpeerError('IO', `cannot stat the ${what} ${dir}: ${(err as Error).message}`, { cause: err });
  }
  const uid = process.getuid();
  if (st.uid !== uid) {
    throw new ClawpeerError(
      'HOME_INSECURE',
      `${what} ${dir} is owned by uid ${st.uid}, not by this user (uid ${uid}): its owner controls the identity and pairs kept there; use a home of your own (--home DIR), or make it yours: chown ${uid} ${dir} && chmod 700 ${dir}`,
    );
  }
  if ((st.mode & 0o022) !== 0) {
    throw new ClawpeerError(
      'HOME_INSECURE',
      `${what} ${dir} is writable by group or others (mode ${(st.mode & 0o7777).toString(8)}): another local user could plant files there and take the identity key; run: chmod 700 ${dir}`,
    );
  }
}
