// `receive`'s offer line and question (cli/offer-question.ts): asked only of a person at a
// terminal without --yes (croc's --yes; a script or pipe is not asked), an empty answer or yes
// accepts, anything else declines, and the sender's names are shown escaped, ten at most.
import t from 'tap';
import {
  acceptsAnswer,
  OFFER_NAMES_SHOWN,
  offerCounts,
  offerLine,
  shouldAskOffer,
} from '../../src/cli/offer-question.js';

t.test('asked only at a terminal, and not with --yes', async (t) => {
  t.equal(shouldAskOffer({ yes: false, stdinIsTTY: true }), true);
  t.equal(shouldAskOffer({ yes: true, stdinIsTTY: true }), false);
  t.equal(shouldAskOffer({ yes: false, stdinIsTTY: false }), false, 'a script or a pipe is not asked');
  t.equal(shouldAskOffer({ yes: true, stdinIsTTY: false }), false);
});

t.test('(Y/n): empty or yes accepts, anything else declines', async (t) => {
  for (const a of ['', ' ', 'y', 'Y', 'yes', 'YES\n']) t.equal(acceptsAnswer(a), true, JSON.stringify(a));
  for (const a of ['n', 'no', 'N', 'nope', 'yess', 'q']) t.equal(acceptsAnswer(a), false, JSON.stringify(a));
});

t.test('the counts leave out what is none, the names are escaped and capped', async (t) => {
  t.equal(offerCounts({ paths: ['a'], files: 1, dirs: 0, bytes: 6 }), '1 file (6 B)');
  t.equal(offerCounts({ paths: ['d'], files: 0, dirs: 1, bytes: 0 }), '1 directory (0 B)');
  t.equal(offerCounts({ paths: [], files: 0, dirs: 0, bytes: 0 }), '0 files (0 B)');
  t.equal(offerCounts({ paths: ['a', 'd'], files: 3, dirs: 2, bytes: 70_026 }), '3 files and 2 directories (68.4 KiB)');
  t.equal(
    offerLine({ paths: ['a.txt', 'x\u001b[2Jy'], files: 2, dirs: 0, bytes: 2 }),
    'offered: 2 files (2 B): a.txt, x\\#033[2Jy',
  );
  const many = Array.from({ length: OFFER_NAMES_SHOWN + 3 }, (_, i) => `f${i}`);
  const line = offerLine({ paths: many, files: many.length, dirs: 0, bytes: 0 });
  t.match(line, /: f0, f1, .*f9 and 3 more$/);
  t.notMatch(line, /f10/);
});
