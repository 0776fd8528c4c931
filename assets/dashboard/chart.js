// Charts as plain SVG built with DOM calls: no library, nothing inline, so they draw under the
// dashboard's Content-Security-Policy (`style-src 'self'`). Sizes are SVG attributes, not style
// attributes (which that policy blocks); colours come from classes in style.css.
const NS = 'http://www.w3.org/2000/svg';

/** `svg('rect', { x: 1 }, child…)`: an SVG element with attributes and children. */
export function svg(tag, attrs = {}, ...children) {
  const node = document.createElementNS(NS, tag);
  for (const [key, value] of Object.entries(attrs)) if (value !== undefined && value !== null) node.setAttribute(key, String(value));
  for (const child of children) if (child !== null && child !== undefined) node.append(child);
  return node;
}

const WIDTH = 480;
const HEIGHT = 220;
const LEFT = 64;
const BOTTOM = 24;
const TOP = 12;

/**
 * A bar chart of `items` ([{ label, value }]), one bar per item in the given order, each with its
 * label and value as data attributes and a tooltip; `format` writes a value for people. Labels
 * under the bars are thinned to about `maxLabels` so dates do not overlap.
 */
export function barChart({ title, items, format, maxLabels = 6 }) {
  const max = Math.max(0, ...items.map((item) => item.value));
  const plotWidth = WIDTH - LEFT - 8;
  const plotHeight = HEIGHT - TOP - BOTTOM;
  const slot = items.length ? plotWidth / items.length : plotWidth;
  const barWidth = Math.max(1, slot * 0.7);
  const every = Math.max(1, Math.ceil(items.length / maxLabels));
  const chart = svg(
    'svg',
    { class: 'chart', viewBox: `0 0 ${WIDTH} ${HEIGHT}`, role: 'img', 'aria-label': title },
    svg('title', {}, title),
  );
  // The axis: zero and the largest value.
  chart.append(
    svg('line', { class: 'axis', x1: LEFT, y1: TOP + plotHeight, x2: WIDTH - 8, y2: TOP + plotHeight }),
    svg('text', { class: 'tick', x: LEFT - 6, y: TOP + plotHeight, 'text-anchor': 'end', 'dominant-baseline': 'middle' }, format(0)),
    svg('text', { class: 'tick', x: LEFT - 6, y: TOP, 'text-anchor': 'end', 'dominant-baseline': 'middle' }, format(max)),
  );
  if (items.length === 0)
    chart.append(
      svg('text', { class: 'empty', x: LEFT + plotWidth / 2, y: TOP + plotHeight / 2, 'text-anchor': 'middle' }, 'no runs in this range'),
    );
  items.forEach((item, i) => {
    const height = max > 0 ? (item.value / max) * plotHeight : 0;
    const x = LEFT + i * slot + (slot - barWidth) / 2;
    chart.append(
      svg(
        'rect',
        {
          class: 'bar',
          x: x.toFixed(2),
          y: (TOP + plotHeight - height).toFixed(2),
          width: barWidth.toFixed(2),
          height: height.toFixed(2),
          'data-label': item.label,
          'data-value': item.value,
        },
        svg('title', {}, `${item.label}: ${format(item.value)}`),
      ),
    );
    if (i % every === 0)
      chart.append(svg('text', { class: 'label', x: (x + barWidth / 2).toFixed(2), y: HEIGHT - 6, 'text-anchor': 'middle' }, item.label));
  });
  return chart;
}
