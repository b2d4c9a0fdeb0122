// Reading the home's config.json as JSON: one reader for the parts that parse it (config-file.ts
// the reach keys, folders-config.ts the shared folders). Capped, so a runaway file is refused.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ClawpeerError } from '../errors.js';

export const CONFIG_FILE_NAME = 'config.json';
const MAX_CONFIG_FILE_BYTES = 64 << 10;

export function configFileOf(homeDir: string): string {
  return join(homeDir, CONFIG_FILE_NAME);
}

/** The parsed JSON of `file`; undefined when there is none. IO or CONFIG_INVALID naming the file. */
export async function readConfigJson(file: string): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new ClawpeerError('IO', `cannot read ${file}: ${(err as Error).message}`, { cause: err });
  }
  if (text.length > MAX_CONFIG_FILE_BYTES)
    throw new ClawpeerError('CONFIG_INVALID', `${file} is larger than ${MAX_CONFIG_FILE_BYTES} bytes`);
  try {
    return JSON.parse(text) as unknown;
  } catch (cause) {
    throw new ClawpeerError('CONFIG_INVALID', `${file} is not valid JSON: ${(cause as Error).message}`, { cause });
  }
}
