// `--svg FILE`: the bench as a line chart that reads without the table: goodput (or revisions/s)
// against the swept link property (RTT, else loss) or the swept setting (window, streams,
// connections), one line per value of the other settings, with axes, ticks, labels, a legend
// and the conditions in the subtitle.
//
// Goals: hand-written, dependency-free SVG 1.1 that any browser or image viewer renders; every
// text escaped; a log x axis when the values span a decade or more (RTT 1..100 ms) so small
// values do not pile up at the origin; ticks on the measured x values themselves.
// Non-goals: interactivity, error bars (repeats are folded into medians by report.ts; the JSON
// keeps every run), more than ~10 series (colours repeat after that, markers tell them apart).
import type { BenchJson, SummaryRow } from './report.js';

export interface ChartPoint {
  readonly x: number;
  readonly y: number;
}

export interface ChartSeries {
  readonly name: string;
  readonly points: readonly ChartPoint[];
}

export interface ChartSpec {
  readonly title: string;
  readonly subtitle?: string;
  readonly xLabel: string;
  readonly yLabel: string;
  /** Log scale on x (all x must be > 0). */
  readonly xLog?: boolean;
  readonly series: readonly ChartSeries[];
}

/** Canvas and plot margins, px. */
const WIDTH_PX = 800;
const HEIGHT_PX = 500;
const MARGIN = { left: 80, right: 190, top: 70, bottom: 60 } as const;
const COLOURS = [
  '#1f77b4',
  '#d62728',
  '#2ca02c',
  '#ff7f0e',
  '#9467bd',
  '#8c564b',
  '#e377c2',
  '#17becf',
  '#7f7f7f',
  '#bcbd22',
];
const Y_TICKS = 5;

export function escapeXml(text: string): string {
  return text
    .replaceAll('&', '&amp;')
    .replaceAll('<', '&lt;')
    .replaceAll('>', '&gt;')
    .replaceAll('"', '&quot;')
    .replaceAll("'", '&apos;');
}

/** A "nice" step (1, 2 or 5 x 10^k) giving about `count` intervals over [0, max]. */
export function niceStep(max: number, count: number): number {
  if (!(max > 0)) return 1;
  const raw = max / count;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const norm = raw / mag;
  return (norm <= 1 ? 1 : norm <= 2 ? 2 : norm <= 5 ? 5 : 10) * mag;
}

function formatTick(v: number): string {
  if (v === 0) return '0';
  if (Math.abs(v) >= 100) return v.toFixed(0);
  if (Math.abs(v) >= 1) return String(Math.round(v * 100) / 100);
  return String(Number(v.toPrecision(2)));
}

/** About what fits across the canvas at 11 px, characters. */
const SUBTITLE_LINE_CHARS = 125;

/** Splits `text` at spaces into lines of at most `max` characters (a longer word stays whole). */
export function wrapText(text: string, max: number): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(' ').filter((w) => w !== '')) {
    if (line !== '' && line.length + 1 + word.length > max) {
      lines.push(line);
      line = word;
    } else {
      line = line === '' ? word : `${line} ${word}`;
    }
  }
  if (line !== '') lines.push(line);
  return lines;
}

const fmt = (v: number): string => (Math.round(v * 10) / 10).toString();

/** Renders `spec` as a standalone SVG document. */
export function renderLineChart(spec: ChartSpec): string {
  const plotW = WIDTH_PX - MARGIN.left - MARGIN.right;
  const plotH = HEIGHT_PX - MARGIN.top - MARGIN.bottom;
  const xs = [...new Set(spec.series.flatMap((s) => s.points.map((p) => p.x)))].sort((a, b) => a - b);
  const ys = spec.series.flatMap((s) => s.points.map((p) => p.y));
  const xLog = spec.xLog === true && xs.length > 0 && xs.every((x) => x > 0);
  const tx = (v: number): number => (xLog ? Math.log10(v) : v);
  const xMin = xs.length === 0 ? 0 : tx(xs[0] ?? 0);
  const xMax = xs.length === 0 ? 1 : tx(xs[xs.length - 1] ?? 1);
  const xSpan = xMax - xMin;
  // A single x value sits in the middle; otherwise 4% padding each side keeps markers off the axes.
  const px = (v: number): number =>
    MARGIN.left + (xSpan === 0 ? plotW / 2 : plotW * (0.04 + (0.92 * (tx(v) - xMin)) / xSpan));
  const step = niceStep(Math.max(0, ...ys), Y_TICKS);
  const yMax = Math.max(step, Math.ceil(Math.max(0, ...ys) / step) * step);
  const py = (v: number): number => MARGIN.top + plotH - (plotH * v) / yMax;

  const out: string[] = [];
  out.push(`<?xml version="1.0" encoding="UTF-8"?>`);
  out.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH_PX}" height="${HEIGHT_PX}" viewBox="0 0 ${WIDTH_PX} ${HEIGHT_PX}" font-family="sans-serif" font-size="12">`,
  );
  out.push(`<title>${escapeXml(spec.title)}</title>`);
  out.push(`<rect x="0" y="0" width="${WIDTH_PX}" height="${HEIGHT_PX}" fill="#ffffff"/>`);
  out.push(
    `<text x="${WIDTH_PX / 2}" y="24" text-anchor="middle" font-size="16" font-weight="bold">${escapeXml(spec.title)}</text>`,
  );
  for (const [i, line] of wrapText(spec.subtitle ?? '', SUBTITLE_LINE_CHARS)
    .slice(0, 2)
    .entries()) {
    out.push(
      `<text x="${WIDTH_PX / 2}" y="${42 + 14 * i}" text-anchor="middle" font-size="11" fill="#444444">${escapeXml(line)}</text>`,
    );
  }

  // Grid and y ticks.
  out.push(`<g class="y-axis" stroke="#000000">`);
  for (let v = 0; v <= yMax + step / 2; v += step) {
    const y = fmt(py(v));
    out.push(`<line x1="${MARGIN.left}" y1="${y}" x2="${MARGIN.left + plotW}" y2="${y}" stroke="#dddddd"/>`);
    out.push(`<line x1="${MARGIN.left - 5}" y1="${y}" x2="${MARGIN.left}" y2="${y}"/>`);
    out.push(
      `<text x="${MARGIN.left - 8}" y="${fmt(py(v) + 4)}" text-anchor="end" stroke="none">${escapeXml(formatTick(v))}</text>`,
    );
  }
  out.push(`</g>`);
  // x ticks on the measured values.
  out.push(`<g class="x-axis" stroke="#000000">`);
  for (const v of xs) {
    const x = fmt(px(v));
    out.push(`<line x1="${x}" y1="${MARGIN.top + plotH}" x2="${x}" y2="${MARGIN.top + plotH + 5}"/>`);
    out.push(
      `<text x="${x}" y="${MARGIN.top + plotH + 20}" text-anchor="middle" stroke="none">${escapeXml(formatTick(v))}</text>`,
    );
  }
  out.push(`</g>`);
  // Axes and labels.
  out.push(
    `<line x1="${MARGIN.left}" y1="${MARGIN.top}" x2="${MARGIN.left}" y2="${MARGIN.top + plotH}" stroke="#000000"/>`,
  );
  out.push(
    `<line x1="${MARGIN.left}" y1="${MARGIN.top + plotH}" x2="${MARGIN.left + plotW}" y2="${MARGIN.top + plotH}" stroke="#000000"/>`,
  );
  out.push(
    `<text class="x-label" x="${MARGIN.left + plotW / 2}" y="${HEIGHT_PX - 15}" text-anchor="middle">${escapeXml(spec.xLabel + (xLog ? ' (log scale)' : ''))}</text>`,
  );
  out.push(
    `<text class="y-label" x="20" y="${MARGIN.top + plotH / 2}" text-anchor="middle" transform="rotate(-90 20 ${MARGIN.top + plotH / 2})">${escapeXml(spec.yLabel)}</text>`,
  );

  // Series: a polyline, a marker per point, a legend entry.
  for (const [i, s] of spec.series.entries()) {
    const colour = COLOURS[i % COLOURS.length] ?? '#000000';
    const pts = [...s.points].sort((a, b) => a.x - b.x);
    out.push(`<g class="series">`);
    out.push(
      `<polyline fill="none" stroke="${colour}" stroke-width="2" points="${pts.map((p) => `${fmt(px(p.x))},${fmt(py(p.y))}`).join(' ')}"/>`,
    );
    for (const p of pts)
      out.push(
        `<circle cx="${fmt(px(p.x))}" cy="${fmt(py(p.y))}" r="${3 + (i % 3)}" fill="${colour}"><title>${escapeXml(`${s.name}: ${formatTick(p.x)} -> ${formatTick(p.y)}`)}</title></circle>`,
      );
    const ly = MARGIN.top + 10 + i * 20;
    const lx = MARGIN.left + plotW + 15;
    out.push(`<line x1="${lx}" y1="${ly}" x2="${lx + 24}" y2="${ly}" stroke="${colour}" stroke-width="2"/>`);
    out.push(`<text x="${lx + 30}" y="${ly + 4}">${escapeXml(s.name)}</text>`);
    out.push(`</g>`);
  }
  out.push(`</svg>`);
  return out.join('\n') + '\n';
}

type Dim = 'rttMs' | 'lossPct' | 'window' | 'streams' | 'connections' | 'sessionConnections' | 'transport';
const DIM_LABEL: Readonly<Record<Dim, string>> = {
  rttMs: 'RTT',
  lossPct: 'loss',
  window: 'W',
  streams: 'streams',
  connections: 'conns',
  sessionConnections: '--connections',
  transport: '',
};
const X_LABEL: Readonly<Record<Exclude<Dim, 'transport'>, string>> = {
  rttMs: 'simulated round-trip time, ms',
  lossPct: 'simulated random loss per packet, %',
  window: 'window W (unacknowledged chunks per stream)',
  streams: 'data streams per connection',
  connections: 'QUIC connections (striped)',
  sessionConnections: 'QUIC connections of one session (--connections)',
};

function valueOf(r: SummaryRow, d: Dim): string | number | null {
  return r[d];
}

function describeValue(d: Dim, v: string | number | null): string {
  if (d === 'transport') return String(v);
  if (d === 'rttMs') return `RTT=${String(v)}ms`;
  if (d === 'lossPct') return `loss=${String(v)}%`;
  if (d === 'sessionConnections') return v === 'auto' ? 'push --connections auto' : `push --connections ${String(v)}`;
  return `${DIM_LABEL[d]}=${String(v)}`;
}

/** Picks the axes from what the bench swept and builds the chart of its summary rows. */
export function chartFromBench(json: BenchJson): ChartSpec {
  const rows = json.summary;
  const varies = (d: Dim): boolean => new Set(rows.map((r) => valueOf(r, d))).size > 1;
  const xDim = (['rttMs', 'lossPct', 'window', 'streams', 'connections'] as const).find(varies) ?? 'window';
  const seriesDims = (
    ['window', 'streams', 'connections', 'sessionConnections', 'rttMs', 'lossPct', 'transport'] as const
  ).filter((d) => d !== xDim && varies(d));
  const revisions = json.workload['kind'] === 'revisions' || json.workload['kind'] === 'revisions-seq';
  const yOf = (r: SummaryRow): number | null =>
    revisions ? r.revisionsPerSec : r.goodputBitsPerSec === null ? null : r.goodputBitsPerSec / 1e6;
  const series = new Map<string, ChartPoint[]>();
  for (const r of rows) {
    const x = valueOf(r, xDim);
    const y = yOf(r);
    if (typeof x !== 'number' || y === null) continue;
    const name =
      seriesDims.length === 0
        ? revisions
          ? 'revisions/s'
          : 'goodput'
        : seriesDims.map((d) => describeValue(d, valueOf(r, d))).join(' ');
    const pts = series.get(name) ?? [];
    pts.push({ x, y });
    series.set(name, pts);
  }
  const xs = rows.map((r) => valueOf(r, xDim)).filter((x): x is number => typeof x === 'number');
  const xLog = xs.length > 0 && xs.every((x) => x > 0) && Math.max(...xs) / Math.min(...xs) >= 10;
  const c = json.conditions;
  const target =
    json.target['kind'] === 'simulate'
      ? `simulated ${String(json.target['spec'])}`
      : `peer ${String(json.target['peer'])}`;
  const yLabel = revisions ? 'revisions per second (whole push)' : 'goodput, Mbit/s (payload / wall time of the push)';
  return {
    title: `clawpeer bench: ${revisions ? 'revisions/s' : 'goodput'} vs ${X_LABEL[xDim].split(',')[0] ?? xDim}`,
    subtitle: `${String(json.workload.description)}, random bytes; ${target}; ${c.cores} cores, load ${c.loadAverageStart[0] ?? '?'}; median of ${json.settings.repeat} run(s)${json.relayAccurate ? '' : '; RELAY INACCURATE'}`,
    xLabel: X_LABEL[xDim],
    yLabel,
    xLog,
    series: [...series.entries()].map(([name, points]) => ({ name, points })),
  };
}
