import t from 'tap';
import { Counter32 } from '../../src/transport/counter32.js';

t.test('a 32-bit counter is widened across its wraps', async (t) => {
  const c = new Counter32(4_000_000_000);
  t.equal(c.update(4_100_000_000), 4_100_000_000, 'no wrap yet');
  // 4.1e9 + 300e6 = 4.4e9, which the binding reports as 4.4e9 - 2^32.
  t.equal(c.update(4_400_000_000 - 2 ** 32), 4_400_000_000, 'past 2^32: the wrap is added back');
  t.equal(c.update(4_400_000_000 - 2 ** 32), 4_400_000_000, 'an unchanged reading adds nothing');
  let raw = 4_400_000_000 - 2 ** 32;
  let total = 4_400_000_000;
  for (let i = 0; i < 10; i++) {
    raw = (raw + 3_000_000_000) % 2 ** 32;
    total += 3_000_000_000;
    t.equal(c.update(raw), total, `step ${i + 1}: ${total} bytes`);
  }
});

t.test('a reading of a counter that is already wider than 32 bits counts the same', async (t) => {
  const c = new Counter32(0);
  t.equal(
    c.update(5_000_000_000),
    5_000_000_000 % 2 ** 32,
    'a reading jumping by more than one wrap cannot be told apart: read at least once per wrap',
  );
  t.equal(c.update(5_000_000_100), (5_000_000_000 % 2 ** 32) + 100, 'and goes on from there');
});
