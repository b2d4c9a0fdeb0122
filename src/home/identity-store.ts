// Persists the node identity as a PKCS#8 PEM (readable by openssl) with mode 0600.
// Loading refuses a key file that group or others can read: a leaked identity key lets
// anyone impersonate this node to every peer that pinned it.
import { createPrivateKey } from 'node:crypto';
import { readFile, stat } from 'node:fs/promises';
import { makeDirs } from '../support/make-dirs.js';
import { writeFileAtomic } from '../support/atomic-file.js';
import { assertPrivateHome } from './home.js';
import { dirname } from 'node:path';
import { ClawpeerError } from '../errors.js';
import { generateIdentity, identityFromSeed, type Identity } from '../crypto/identity.js';

const KEY_FILE_MODE = 0o600;

export async function identityExists(file: string): Promise<boolean> {
  try {
    await stat(file);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw new ClawpeerError('IO', `cannot stat ${file}: ${(err as Error).message}`, { cause: err });
  }
}

/** Creates a new identity at `file`. Refuses to replace an existing one unless `force`. */
export async function createIdentity(file: string, options: { force?: boolean } = {}): Promise<Identity> {
  if (!options.force && (await identityExists(file))) {
    throw new ClawpeerError(
      'IDENTITY_EXISTS',
      `identity already exists at ${file} (use --force to replace it; peers that pinned the old key will refuse the new one)`,
    );
  }
  const identity = generateIdentity();
  const pem = identity.privateKeyObject.export({ format: 'pem', type: 'pkcs8' }).toString();
  await makeDirs(dirname(file), 0o700);
  await assertPrivateHome(dirname(file));
  // Exclusive, random temp name, exactly 0600: a planted symlink cannot receive the key.
  await writeFileAtomic(file, pem, KEY_FILE_MODE);
  return identity;
}

export async function loadIdentity(file: string): Promise<Identity> {
  await assertPrivateHome(dirname(file));
  let text: string;
  try {
    const info = await stat(file);
    if (process.platform !== 'win32' && (info.mode & 0o077) !== 0) {
      throw new ClawpeerError(
        'IDENTITY_INSECURE',
        `identity key ${file} has mode ${(info.mode & 0o777).toString(8)}; run: chmod 600 ${file}`,
      );
    }
    text = await readFile(file, 'utf8');
  } catch (err) {
    if (err instanceof ClawpeerError) throw err;
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
      throw new ClawpeerError('IDENTITY_MISSING', `no identity at ${file}: run \`clawpeer init\` first`);
    }
    throw new ClawpeerError('IO', `cannot read ${file}: ${(err as Error).message}`, { cause: err });
  }
  try {
    const key = createPrivateKey({ key: text, format: 'pem' });
    if (key.asymmetricKeyType !== 'ed25519')
      throw new Error(`key type is ${key.asymmetricKeyType ?? 'unknown'}, not ed25519`);
    const d = key.export({ format: 'jwk' }).d;
    if (d === undefined) throw new Error('no private part');
    return identityFromSeed(new Uint8Array(Buffer.from(d, 'base64url')));
  } catch (cause) {
    throw new ClawpeerError(
      'IDENTITY_CORRUPT',
      `identity key ${file} is not an Ed25519 PKCS#8 PEM key: ${(cause as Error).message}`,
      { cause },
    );
  }
}

/**
 * The home's identity when it has one, else a fresh one kept in memory only (`send` / `receive`
 * on a machine with no `init`: the peer pins it for one transfer).
 */
export async function homeOrEphemeralIdentity(file: string): Promise<{ identity: Identity; ephemeral: boolean }> {
  if (await identityExists(file)) return { identity: await loadIdentity(file), ephemeral: false };
  return { identity: generateIdentity(), ephemeral: true };
}
