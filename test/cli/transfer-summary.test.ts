import t from 'tap';
import { transferSummaryText } from '../../src/cli/transfer-summary.js';

t.test('a deduplicated push says what travelled, its rate over those bytes, and that the rest was there', async (t) => {
  const line = transferSummaryText('pushed', {
    files: 1,
    bytes: 20 << 20,
    wireBytes: 3379,
    chunksSent: 0,
    chunksSkipped: 320,
    chunksCompressed: 0,
    streams: 4,
    window: 64,
    seconds: 0.5,
  });
  t.match(
    line,
    /^pushed 1 file, 20\.0 MiB in 0\.50 s; 3\.3 KiB travelled \(6\.6 KiB\/s\) over 4 streams, window 64; 0 chunks sent \(0 compressed\), 320 already there: all of the content was there already$/,
  );
  t.notMatch(line, /MiB\/s/, 'no rate over bytes that did not travel');
});

t.test('a push that sent content rates what crossed the connection', async (t) => {
  const line = transferSummaryText('pulled', {
    files: 2,
    bytes: 2 << 20,
    wireBytes: 2 << 20,
    chunksSent: 32,
    chunksSkipped: 0,
    chunksCompressed: 3,
    streams: 1,
    window: 8,
    seconds: 2,
  });
  t.match(
    line,
    /^pulled 2 files, 2\.0 MiB in 2\.00 s; 2\.0 MiB travelled \(1\.0 MiB\/s\) over 1 stream, window 8; 32 chunks sent \(3 compressed\), 0 already there$/,
  );
});
