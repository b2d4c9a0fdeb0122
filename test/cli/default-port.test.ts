// `listen` and `doctor` take their default port from one constant, so they cannot disagree on it.
import t from 'tap';
import yargs, { type Argv } from 'yargs';
import { registerDoctorCommands } from '../../src/cli/commands/doctor.js';
import { registerNetworkCommands } from '../../src/cli/commands/network.js';
import type { Runner } from '../../src/cli/context.js';
import { DEFAULT_LISTEN_PORT } from '../../src/home/facade.js';

const idle: Runner = () => async () => undefined;

/** What `--help` of one command prints. */
async function helpOf(register: (cli: Argv, run: Runner) => Argv, command: string): Promise<string> {
  const cli = register(yargs().scriptName('clawpeer').wrap(null).exitProcess(false), idle);
  return new Promise((resolve, reject) => {
    void cli.parse([command, '--help'], {}, (err, _argv, output) => (err ? reject(err) : resolve(output)));
  });
}

t.test('listen --port defaults to DEFAULT_LISTEN_PORT; doctor names the same port', async (t) => {
  t.not(DEFAULT_LISTEN_PORT, 0);
  const listen = await helpOf(registerNetworkCommands, 'listen');
  t.match(listen, new RegExp(`--port[^\\n]*\\[default: ${DEFAULT_LISTEN_PORT}\\]`));
  const doctor = await helpOf(registerDoctorCommands, 'doctor');
  t.match(doctor, new RegExp(`listener's, else ${DEFAULT_LISTEN_PORT}\\)`));
});
