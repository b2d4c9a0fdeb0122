// Loaded into every test file by run-tests.mjs (--require): when the runner stops a file that
// ran past its deadline (SIGTERM), the file says what it was still waiting on (pending timers,
// sockets, file-system requests...), so a hang leaves a trace instead of an empty TAP log. A
// file blocked in a synchronous call cannot answer; the runner's SIGKILL follows either way.
'use strict';
process.once('SIGTERM', () => {
  process.stderr.write(
    `\n# ${process.argv[1] ?? 'test file'} stopped past its deadline; still active: ${JSON.stringify(process.getActiveResourcesInfo())}\n`,
  );
  process.exit(143);
});
