// What the yargs command handler receives for a command line, nothing run: the fast paths'
// parity tests (plain-fast-path, report-fast-path) compare their own parse against it.
import { buildCli } from '../../src/cli/main.js';

export async function yargsArgs(argv: string[]): Promise<Record<string, unknown> | undefined> {
  let got: Record<string, unknown> | undefined;
  const cli = await buildCli(argv, () => async (args) => {
    got = { ...args };
  });
  await cli.parseAsync();
  return got;
}
