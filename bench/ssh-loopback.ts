// A private sshd on 127.0.0.1 for comparing against scp and rsync over ssh: installs
// openssh-server, openssh-client and rsync from Debian's packages when missing, generates
// throwaway host and client keys, and never touches the system's ssh configuration.
import { execFile, spawn, spawnSync } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { userInfo } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { promisify } from 'node:util';
import { MiB } from './common.js';

const execFileAsync = promisify(execFile);
type Log = (msg: string) => void;

export interface SshSetup {
  readonly port: number;
  readonly user: string;
  /** Options common to ssh and scp: no user config, our key, no host key prompts, quiet. */
  readonly commonArgs: string[];
  /** commonArgs plus port and user, for ssh. */
  readonly sshArgs: string[];
  readonly versions: Record<string, string>;
  readonly installed: boolean;
  stop(): Promise<void>;
}

export function commandExists(name: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${name}`], { stdio: 'ignore' }).status === 0;
}

function findSshd(): string | undefined {
  for (const p of ['/usr/sbin/sshd', '/usr/local/sbin/sshd', '/sbin/sshd']) {
    if (spawnSync('test', ['-x', p]).status === 0) return p;
  }
  const r = spawnSync('sh', ['-c', 'command -v sshd'], { encoding: 'utf8' });
  return r.status === 0 ? r.stdout.trim() : undefined;
}

/** Installs openssh-server, openssh-client and rsync from the Debian archive when sshd is missing. */
async function ensureSshTools(log: Log): Promise<boolean> {
  if (findSshd() !== undefined && commandExists('rsync') && commandExists('scp')) return false;
  log('installing openssh-server, openssh-client, rsync (apt-get)');
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  const sudo = process.getuid?.() === 0 ? [] : ['sudo', '-n'];
  const run = async (args: string[]): Promise<void> => {
    const [cmd, ...rest] = [...sudo, ...args];
    await execFileAsync(cmd!, rest, { env, maxBuffer: 64 * MiB });
  };
  await run(['apt-get', 'update']);
  await run(['apt-get', 'install', '-y', '--no-install-recommends', 'openssh-server', 'rsync', 'openssh-client']);
  return true;
}

function freeTcpPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => resolve(port));
    });
  });
}

export async function startSshd(dir: string, log: Log): Promise<SshSetup> {
  const installed = await ensureSshTools(log);
  const sshd = findSshd();
  if (sshd === undefined) throw new Error('sshd not found after installing openssh-server');
  await mkdir(dir, { recursive: true });
  const hostKey = join(dir, 'host_ed25519');
  const clientKey = join(dir, 'client_ed25519');
  for (const key of [hostKey, clientKey])
    await execFileAsync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', key]);
  const authorized = join(dir, 'authorized_keys');
  await writeFile(authorized, await readFile(`${clientKey}.pub`), { mode: 0o600 });
  // Privilege separation needs this directory when sshd starts as root (the service would create it).
  if (process.getuid?.() === 0) await mkdir('/run/sshd', { recursive: true, mode: 0o755 });
  const port = await freeTcpPort();
  const config = join(dir, 'sshd_config');
  await writeFile(
    config,
    [
      `Port ${port}`,
      'ListenAddress 127.0.0.1',
      `HostKey ${hostKey}`,
      `AuthorizedKeysFile ${authorized}`,
      `PidFile ${join(dir, 'sshd.pid')}`,
      'PubkeyAuthentication yes',
      'PasswordAuthentication no',
      'KbdInteractiveAuthentication no',
      'UsePAM no',
      'StrictModes no',
      'PermitRootLogin prohibit-password',
      'Subsystem sftp internal-sftp',
      'LogLevel ERROR',
      '',
    ].join('\n'),
  );
  const child = spawn(sshd, ['-D', '-e', '-f', config], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<void>((res) => child.on('close', () => res()));
  const user = userInfo().username;
  const commonArgs = [
    '-F',
    '/dev/null',
    '-i',
    clientKey,
    '-o',
    'IdentitiesOnly=yes',
    '-o',
    'BatchMode=yes',
    '-o',
    'StrictHostKeyChecking=no',
    '-o',
    `UserKnownHostsFile=${join(dir, 'known_hosts')}`,
    '-o',
    'LogLevel=ERROR',
  ];
  const sshArgs = [...commonArgs, '-p', String(port), '-l', user];
  const stop = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await exited;
  };
  // Wait until it accepts a login.
  const deadline = performance.now() + 10_000;
  for (;;) {
    const r = spawnSync('ssh', [...sshArgs, '127.0.0.1', 'true'], { encoding: 'utf8' });
    if (r.status === 0) break;
    if (performance.now() > deadline || child.exitCode !== null) {
      await stop();
      throw new Error(`private sshd did not accept a login: ${r.stderr} ${stderr}`);
    }
    await new Promise((res) => setTimeout(res, 100));
  }
  const versionOf = (cmd: string, args: string[]): string => {
    const r = spawnSync(cmd, args, { encoding: 'utf8' });
    return `${r.stdout}${r.stderr}`.split('\n')[0]?.trim() ?? 'unknown';
  };
  // Which cipher the defaults negotiate (the first of the client's list the server also has).
  const cipherLine = spawnSync('ssh', [...sshArgs, '-v', '127.0.0.1', 'true'], { encoding: 'utf8' })
    .stderr.split('\n')
    .find((l) => l.includes('kex: server->client cipher'));
  return {
    port,
    user,
    commonArgs,
    sshArgs,
    installed,
    versions: {
      ssh: versionOf('ssh', ['-V']),
      rsync: versionOf('rsync', ['--version']),
      cipher: cipherLine?.replace(/^debug1: /, '').trim() ?? 'unknown',
    },
    stop,
  };
}

/** ssh with our options, quoted for rsync's -e. */
export function sshCommand(ssh: SshSetup): string {
  return ['ssh', ...ssh.sshArgs]
    .map((a) => (/^[\w@%+=:,./-]+$/.test(a) ? a : `'${a.replace(/'/g, `'\\''`)}'`))
    .join(' ');
}
