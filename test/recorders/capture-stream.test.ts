// Captures are read as streams, never whole: the scanner hands out each JSONL line and each JSON
// array element as soon as its bytes are in (whatever the chunking), keeps the old reading of a
// file whose first line is a batch array, and a child process with a 64 MB heap reads a 100 MB
// JSON array (the whole-file read died there; at 560 MB it died with `Invalid string length`).

import t from 'tap';
import { closeSync, openSync, readFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { CaptureScanner, parseCapture, type CaptureItem } from '../../src/recorders/capture.js';
import { tempDir } from './helpers.js';

const BURST = fileURLToPath(new URL('../../../test/fixtures/clob/ws_market_price_change_crossing_burst.json', import.meta.url));

/** Feeds `text` in `size`-byte chunks; returns the items and after which chunk each came out. */
function scan(text: string, size: number): { items: CaptureItem[]; at: number[]; chunks: number } {
  const sc = new CaptureScanner();
  const b = Buffer.from(text);
  const items: CaptureItem[] = [];
  const at: number[] = [];
  let k = 0;
  const keep = (x: CaptureItem): void => {
    items.push(x);
    at.push(k);
  };
  for (let i = 0; i < b.length; i += size, k++) for (const x of sc.push(b.subarray(i, i + size))) keep(x);
  for (const x of sc.end()) keep(x);
  return { items, at, chunks: k };
}
const msgs = (items: CaptureItem[]) => items.flatMap((x) => ('message' in x ? [x.message] : []));

t.test('JSONL and JSON arrays come out message by message, the same for any chunking', async (t) => {
  const burst = readFileSync(BURST, 'utf8');
  const elements = JSON.parse(burst) as unknown[];
  const jsonl = elements.map((m, i) => JSON.stringify({ recv_ts: 1000 + i, msg: m, ticker: 'X' })).join('\n') + '\n';
  const minified = JSON.stringify(elements);
  for (const [name, text, n] of [
    ['pretty array', burst, elements.length],
    ['minified array', minified, elements.length],
    ['jsonl', jsonl, elements.length],
  ] as const) {
    for (const size of [1, 7, 4096, 1 << 20]) {
      const { items, at, chunks } = scan(text, size);
      t.same(
        msgs(items).map((m) => m.msg),
        elements,
        `${name} in ${size}-byte chunks: every message, in order`,
      );
      t.equal(items.length, n, `${name}: no problem`);
      if (size === 7 && name !== 'minified array')
        t.ok(at[0] < chunks / 10, `${name}: the first message comes out long before the end (chunk ${at[0]} of ${chunks})`);
    }
  }
  t.same(
    msgs(scan(jsonl, 13).items)[3],
    { recv_ts: 1003, msg: elements[3], line: 4, extra: { ticker: 'X' }, bytes: jsonl.split('\n')[3].length },
    'wrapper lines keep recv_ts, line, extra keys and their size',
  );
  t.same(
    msgs(scan(burst, 13).items)
      .map((m) => m.line)
      .slice(0, 3),
    [1, 2, 3],
    'an array element is numbered by its position',
  );
  // A minified array longer than the first-line wait (8 MiB) is streamed too, not held to its end.
  const long = JSON.stringify(Array.from({ length: 100_000 }, (_, i) => ({ recv_ts: i + 1, msg: { pad: 'x'.repeat(300) } })));
  const l = scan(long, 64 * 1024);
  t.equal(msgs(l.items).length, 100_000);
  t.ok(l.at[0] < l.chunks / 2, `a long one-line array streams (first at chunk ${l.at[0]} of ${l.chunks})`);
});

t.test('a first line holding one batch array followed by more lines is JSONL, as before', async (t) => {
  const text =
    '[{"event_type":"book","timestamp":"1"},{"event_type":"book","timestamp":"2"}]\n[{"event_type":"trade"}]\n{"recv_ts":5,"msg":{"a":1}}\n';
  for (const size of [1, 5, 1000]) {
    const m = msgs(scan(text, size).items);
    t.equal(m.length, 3, `three messages (${size}-byte chunks)`);
    t.ok(Array.isArray(m[0].msg) && (m[0].msg as unknown[]).length === 2, 'line 1 is one batch message');
    t.same(
      m.map((x) => x.line),
      [1, 2, 3],
    );
  }
  t.same(
    parseCapture('[{"a":1},{"a":2}]').messages.map((m) => m.msg),
    [{ a: 1 }, { a: 2 }],
    'one line, nothing after: the array format',
  );
  t.same(parseCapture('[{"a":1},{"a":2}]\n\n  \n').messages.length, 2, 'trailing blank lines change nothing');
});

t.test('a cut-off array and bad lines are problems with their place, never thrown', async (t) => {
  const cut = scan('[\n{"a":1},\n{"a":2},\n{"a":', 3).items;
  t.equal(msgs(cut).length, 2);
  t.match(
    cut.filter((x) => 'problem' in x),
    [{ problem: { line: 3, problem: /cut off after 2 complete message/ } }],
  );
  const bad = parseCapture('{"a":1}\nnot json\n{"a":"]\\"["}\n');
  t.same(
    bad.messages.map((m) => m.msg),
    [{ a: 1 }, { a: ']"[' }],
  );
  t.match(bad.problems, [{ line: 2, problem: /not JSON/ }]);
  const strings = parseCapture('[{"s":"a,b]}{[\\"\\\\"},\n{"s":"\\u005d"}]');
  t.same(
    strings.messages.map((m) => m.msg),
    [{ s: 'a,b]}{["\\' }, { s: ']' }],
    'brackets, commas and escapes inside strings do not split elements',
  );
});

t.test('a 100 MB JSON array is read in a 64 MB heap (the whole-file read aborts there)', async (t) => {
  const dir = tempDir();
  const file = join(dir, 'big.json');
  const el = JSON.stringify({
    recv_ts: 1790658601000,
    msg: {
      event_type: 'book',
      asset_id: '7'.repeat(77),
      market: `0x${'a'.repeat(64)}`,
      bids: [{ price: '.5', size: '10' }],
      asks: [],
      timestamp: '1790658600000',
    },
  });
  const chunk = Buffer.from(`${Array(1000).fill(el).join(',')},`);
  const fd = openSync(file, 'w');
  writeSync(fd, '[');
  let n = 0;
  for (; n * chunk.length < 100e6; n++) writeSync(fd, chunk);
  writeSync(fd, `${el}]`);
  closeSync(fd);
  const mod = fileURLToPath(new URL('../../src/recorders/capture.js', import.meta.url));
  const script = `const { readCapture } = await import(${JSON.stringify(mod)}); let n = 0, p = 0;
    for await (const x of readCapture(process.argv[1])) { if ('message' in x) n++; else p++; }
    console.log(JSON.stringify({ n, p }));`;
  const r = spawnSync(process.execPath, ['--max-old-space-size=64', '--input-type=module', '-e', script, file], {
    encoding: 'utf8',
    timeout: 240_000,
  });
  t.equal(r.status, 0, `the child finished (${r.stderr.slice(0, 300)})`);
  t.same(JSON.parse(r.stdout), { n: n * 1000 + 1, p: 0 }, 'every message, no problem');
});
