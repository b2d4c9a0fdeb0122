// Where a node keeps its state: identity key, paired peers, default inbox share.
// --home beats $CLAWPEER_HOME beats the platform's config dir.
import { homedir, platform } from 'node:os';
import { join, resolve } from 'node:path';

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
