// rsync's --chmod: permission changes applied to what a transfer lands with, in chmod(1)'s
// syntax. A comma-separated list of clauses, each optionally for directories only (`D`) or files
// only (`F`): octal (`D755`, `F644`) or symbolic (`u+rwx`, `go-w`, `a=r`, `+X`, `g=u`).
// Clauses apply in order. `X` is execute for directories and for files someone may execute
// already. Who left out means all of user, group and other (rsync does not apply the umask).
// Non-goals: setuid, setgid and sticky bits (`s`, `t`, 4-digit octal), which a publish drops.
import { ClawpeerError } from '../errors.js';

/** A parsed --chmod: the mode an entry of `kind` lands with, given the mode it has. */
export type ModeChange = (mode: number, kind: 'file' | 'dir') => number;

type Clause = (mode: number, isDir: boolean) => number;

const WHO_BITS: Readonly<Record<string, number>> = { u: 0o700, g: 0o070, o: 0o007, a: 0o777 };
const PERM_BITS: Readonly<Record<string, number>> = { r: 0o444, w: 0o222, x: 0o111 };
const CLAUSE = /^([DF]?)(?:([0-7]{1,4})|([ugoa]*)((?:[-+=][rwxXstugo]*)+))$/;

/** `spec` (one --chmod value, comma-separated clauses) as a ModeChange; USAGE naming the bad clause. */
export function parseChmod(spec: string): ModeChange {
  const clauses = spec.split(',').map((text) => parseClause(text, spec));
  return (mode, kind) => clauses.reduce((m, clause) => clause(m, kind === 'dir'), mode & 0o777);
}

/** Several --chmod values, applied in the order given. */
export function combineChmods(specs: readonly string[]): ModeChange | undefined {
  if (specs.length === 0) return undefined;
  const changes = specs.map(parseChmod);
  return (mode, kind) => changes.reduce((m, change) => change(m, kind), mode);
}

function parseClause(text: string, spec: string): Clause {
  const m = CLAUSE.exec(text);
  if (m === null) {
    throw new ClawpeerError(
      'USAGE',
      `--chmod ${JSON.stringify(spec)}: ${JSON.stringify(text)} is not a chmod clause (like D755, F644, u+rwx, go-w, +X; D or F first for directories or files only)`,
    );
  }
  const only = m[1] === 'D' ? 'dir' : m[1] === 'F' ? 'file' : undefined;
  const applies = (isDir: boolean): boolean => only === undefined || (only === 'dir') === isDir;
  const octal = m[2];
  if (octal !== undefined) {
    const bits = parseInt(octal, 8) & 0o777;
    return (mode, isDir) => (applies(isDir) ? bits : mode);
  }
  const whoText = m[3] ?? '';
  const who = whoText === '' ? 0o777 : whoText.split('').reduce((bits, c) => bits | (WHO_BITS[c] ?? 0), 0);
  const actions = [...(m[4] ?? '').matchAll(/([-+=])([rwxXstugo]*)/g)].map(([, op, perms]) => ({
    op: op ?? '+',
    perms: perms ?? '',
  }));
  return (mode, isDir) => {
    if (!applies(isDir)) return mode;
    let out = mode;
    for (const { op, perms } of actions) {
      const bits = permBits(perms, out, isDir) & who;
      if (op === '+') out |= bits;
      else if (op === '-') out &= ~bits;
      else out = (out & ~who) | bits;
    }
    return out & 0o777;
  };
}

/** The bits `perms` names for every class, against `mode` as it is before this action. */
function permBits(perms: string, mode: number, isDir: boolean): number {
  let bits = 0;
  for (const c of perms) {
    if (c === 'X') {
      if (isDir || (mode & 0o111) !== 0) bits |= 0o111;
    } else if (c === 'u' || c === 'g' || c === 'o') {
      // Copy that class's bits to every class: g=u gives the group what the user has.
      const shift = c === 'u' ? 6 : c === 'g' ? 3 : 0;
      const rwx = (mode >> shift) & 0o7;
      bits |= rwx * 0o111;
    } else {
      bits |= PERM_BITS[c] ?? 0; // s and t: dropped on publish, so nothing to set
    }
  }
  return bits;
}
