// The SVG chart: well-formed XML, one polyline per series, axes labelled, text escaped, and the
// axes picked from what the bench swept.
import t from 'tap';
import { toBenchJson } from '../../src/benchkit/report.js';
import { chartFromBench, escapeXml, niceStep, renderLineChart, wrapText } from '../../src/benchkit/svg.js';
import { fakeReport } from './fixtures.js';
import { findAll, parseXml } from './xml.js';

t.test('renderLineChart: one root <svg>, a polyline per series, labels, escaped text', async (t) => {
  const svg = renderLineChart({
    title: 'goodput <&> "test"',
    subtitle: 'conditions',
    xLabel: 'RTT, ms',
    yLabel: 'Mbit/s',
    xLog: true,
    series: [
      {
        name: 'W=1',
        points: [
          { x: 1, y: 10 },
          { x: 100, y: 1 },
          { x: 5, y: 8 },
        ],
      },
      {
        name: 'W=16 & more',
        points: [
          { x: 1, y: 90 },
          { x: 5, y: 80 },
          { x: 100, y: 20 },
        ],
      },
    ],
  });
  const doc = parseXml(svg);
  t.equal(doc.children.length, 1);
  const root = doc.children[0]!;
  t.equal(root.name, 'svg');
  t.equal(root.attrs['xmlns'], 'http://www.w3.org/2000/svg');
  const lines = findAll(root, 'polyline');
  t.equal(lines.length, 2);
  // Points are sorted by x, so the first series' line runs left to right through 3 points.
  const xs = (lines[0]!.attrs['points'] ?? '').split(' ').map((p) => Number(p.split(',')[0]));
  t.equal(xs.length, 3);
  t.ok(xs[0]! < xs[1]! && xs[1]! < xs[2]!);
  const texts = findAll(root, 'text').map((e) => e.text);
  t.ok(texts.includes('RTT, ms (log scale)'), 'x label');
  t.ok(texts.includes('Mbit/s'), 'y label');
  t.ok(texts.includes('W=16 &amp; more'), 'legend, escaped');
  t.ok(texts.includes('goodput &lt;&amp;&gt; &quot;test&quot;'), 'title, escaped');
  t.ok(
    ['1', '5', '100'].every((v) => texts.includes(v)),
    'x ticks on the measured values',
  );
  t.ok(texts.includes('0') && texts.includes('100'), 'y ticks from 0 to a nice maximum');
});

t.test('chartFromBench: x is the swept RTT (log), one series per window, y in revisions/s', async (t) => {
  const chart = chartFromBench(toBenchJson(fakeReport()));
  t.equal(chart.xLabel, 'simulated round-trip time, ms');
  t.equal(chart.xLog, true);
  t.match(chart.yLabel, /revisions per second/);
  t.same(
    chart.series.map((s) => s.name),
    ['W=1', 'W=4', 'W=16'],
  );
  t.same(
    chart.series[0]?.points.map((p) => p.x),
    [1, 5, 50, 100],
  );
  t.match(chart.subtitle, /100 revisions of one 4096-byte page.*2 cores, load 1\.5/);
  const svg = renderLineChart(chart);
  t.equal(findAll(parseXml(svg).children[0]!, 'polyline').length, 3);
  const inaccurate = chartFromBench(toBenchJson(fakeReport({ accurate: false })));
  t.match(inaccurate.subtitle, /RELAY INACCURATE/);
});

t.test('helpers: nice steps, escaping, wrapping', async (t) => {
  t.equal(niceStep(100, 5), 20);
  t.equal(niceStep(7, 5), 2);
  t.equal(niceStep(0.3, 5), 0.1);
  t.equal(niceStep(0, 5), 1);
  t.equal(escapeXml(`<a href="x">'&'</a>`), '&lt;a href=&quot;x&quot;&gt;&apos;&amp;&apos;&lt;/a&gt;');
  t.same(wrapText('aa bb cc dd', 5), ['aa bb', 'cc dd']);
  t.same(wrapText('averyveryverylongword x', 5), ['averyveryverylongword', 'x']);
  t.throws(() => parseXml('<svg><g></svg>'), /closes/);
});
