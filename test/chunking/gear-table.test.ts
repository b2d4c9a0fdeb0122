import t from 'tap';
import { GEAR_TABLE, GEAR_TABLE_BLAKE3_HEX, GEAR_TABLE_I32, GEAR_TABLE_SEED } from '../../src/chunking/gear-table.js';
import { blake3, toHex } from '../../src/chunking/blake3.js';

function tableBytes(table: Uint32Array): Uint8Array {
  const bytes = new Uint8Array(table.length * 4);
  const view = new DataView(bytes.buffer);
  table.forEach((v, i) => view.setUint32(4 * i, v, true));
  return bytes;
}

t.test('the literal table is pinned by its BLAKE3 hash', async (t) => {
  t.equal(GEAR_TABLE.length, 256);
  t.equal(toHex(blake3(tableBytes(GEAR_TABLE))), GEAR_TABLE_BLAKE3_HEX);
  t.equal(GEAR_TABLE_BLAKE3_HEX, 'ecfef10e0ddb5fc1538773b48757c303afede7e108561c57f08d54be4eb99ff4');
});

t.test('the table regenerates from its documented recipe', async (t) => {
  const seed = new TextEncoder().encode(GEAR_TABLE_SEED);
  const regenerated = new Uint32Array(256);
  for (let k = 0; k < 32; k++) {
    const input = new Uint8Array(seed.length + 1);
    input.set(seed);
    input[seed.length] = k;
    const d = blake3(input);
    const view = new DataView(d.buffer, d.byteOffset, d.byteLength);
    for (let m = 0; m < 8; m++) regenerated[8 * k + m] = view.getUint32(4 * m, true);
  }
  t.same(Array.from(regenerated), Array.from(GEAR_TABLE));
});

t.test('the int32 view has the same bits', async (t) => {
  for (let i = 0; i < 256; i++) {
    if (GEAR_TABLE_I32[i]! >>> 0 !== GEAR_TABLE[i]) t.fail(`entry ${i} differs`);
  }
  t.equal(GEAR_TABLE_I32.buffer, GEAR_TABLE.buffer);
  t.equal(new Set(GEAR_TABLE).size, 256, 'all values distinct');
});
