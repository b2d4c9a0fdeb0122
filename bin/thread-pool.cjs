// libuv's thread pool runs every awaited file-system call, fsync included. Its default of 4
// threads let only 4 fsyncs of a batch commit wait on the journal at once: 2,000 small files
// took 300-600 ms to fsync here, 120-140 ms with 32 threads (threads are created once and
// sleep when idle). Must run before the pool's first use (the launcher, or `node --require`);
// a size set by the user wins.
'use strict';
if (process.env.UV_THREADPOOL_SIZE === undefined) process.env.UV_THREADPOOL_SIZE = '32';
