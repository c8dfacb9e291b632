// 2. The node labels and the edges' arrowheads, in a layer over the plot: see gs-0-core.js.
(function () {
  'use strict';
  const gs = window.graphscopePage = window.graphscopePage || {};
  const SHARED = window.graphscopeShared;

  const MOST = SHARED.labelLimit;  // labels drawn at once
  const ROOM_PX = 40;   // px per x unit: labels alternate above and below, so each has two units
  const SVG = 'http://www.w3.org/2000/svg';
  const HEAD_PX = 8;    // an arrowhead's length

  function drawLabels(gd) {
    const full = gd._fullLayout;
    // No data: the empty figure of a file that failed to load.
    if (!full || !full.xaxis || !gd._fullData || !Array.isArray(gd.data)) return;
    const layer = gs.labelLayer(gd);
    if (!layer) return;
    const xa = full.xaxis, ya = full.yaxis;
    const [x0, x1] = [Math.min(...xa.range), Math.max(...xa.range)];
    const [ylo, yhi] = [Math.min(...ya.range), Math.max(...ya.range)];
    const always = full.meta && full.meta.labels === 'always';
    const found = [];
    if (always || xa._length / (x1 - x0) >= ROOM_PX) {
      scan: for (let i = 0; i < gd.data.length; i++) {
        const t = gd.data[i];
        // A trace hidden from its legend hides its labels too.
        if (!Array.isArray(t.meta) || !t.x || !gd._fullData[i] || gd._fullData[i].visible !== true) {
          continue;
        }
        const size = t.marker && t.marker.size;
        for (let j = 0; j < t.x.length; j++) {
          const x = t.x[j], y = t.y[j];
          if (x < x0 || x > x1 || y < ylo || y > yhi) continue;
          if (found.length === MOST) {  // too many to read: none, as when zoomed out
            found.length = 0;
            break scan;
          }
          const radius = (Array.isArray(size) ? size[j] : size || 11) / 2;
          found.push([x, y, t.meta[j], radius]);
        }
      }
    }
    const texts = document.createDocumentFragment();
    const right = full.meta && full.meta.side === 'right';  // a column of blocks
    for (const [x, y, label, radius] of found) {
      const text = document.createElementNS(SVG, 'text');
      if (right) {  // beside the node, clear of the edges above and below it
        text.setAttribute('x', (xa.l2p(x) + radius + 5).toFixed(1));
        text.setAttribute('y', (ya.l2p(y) + 3).toFixed(1));
        text.setAttribute('text-anchor', 'start');
      } else {
        // Below and above by turns along a row, as figure._above_or_below says.
        const below = Math.floor(x) % 2 === 0;
        text.setAttribute('x', xa.l2p(x).toFixed(1));
        text.setAttribute('y', (ya.l2p(y) + (below ? radius + 9 : -radius - 3)).toFixed(1));
        text.setAttribute('text-anchor', 'middle');
      }
      text.setAttribute('font-size', '9');
      text.setAttribute('fill', '#333333');
      text.setAttribute('font-family', '"Open Sans", verdana, arial, sans-serif');
      text.textContent = label;  // text, never markup: labels come from files
      texts.appendChild(text);
    }
    const heads = arrowheads(gd, xa, ya, x0, x1, ylo, yhi);
    if (heads) texts.appendChild(heads);
    for (const ring of gs.ringMarks(gd)) texts.appendChild(ring);
    layer.replaceChildren(texts);
  }

  // The arrowheads of the edges ending in view, as one path: each edge is a segment of the
  // edges trace, [start, end, null], and its head points along it on the screen, whatever
  // the zoom's aspect. None for a graph Plotly draws with WebGL (figure.SVG_LIMIT).
  function arrowheads(gd, xa, ya, x0, x1, ylo, yhi) {
    if (!(gd._fullLayout.meta && gd._fullLayout.meta.arrows)) return null;
    const edges = gd.data.find((t) => t.name === SHARED.traces.edges);
    if (!edges || !edges.x) return null;
    const xs = edges.x, ys = edges.y, parts = [];
    for (let i = 0; i + 1 < xs.length; i += 3) {
      const ex = xs[i + 1], ey = ys[i + 1];
      if (ex < x0 || ex > x1 || ey < ylo || ey > yhi) continue;
      const px = xa.l2p(ex), py = ya.l2p(ey);
      const dx = px - xa.l2p(xs[i]), dy = py - ya.l2p(ys[i]);
      const norm = Math.hypot(dx, dy);
      if (!norm) continue;
      const ux = dx / norm, uy = dy / norm;
      const bx = px - HEAD_PX * ux, by = py - HEAD_PX * uy;
      const wx = -uy * HEAD_PX * 0.45, wy = ux * HEAD_PX * 0.45;
      parts.push(`M${px.toFixed(1)},${py.toFixed(1)}L${(bx + wx).toFixed(1)},` +
        `${(by + wy).toFixed(1)}L${(bx - wx).toFixed(1)},${(by - wy).toFixed(1)}Z`);
    }
    if (!parts.length) return null;
    const path = document.createElementNS(SVG, 'path');
    path.setAttribute('class', 'gs-arrowheads');
    path.setAttribute('d', parts.join(''));
    path.setAttribute('fill', '#9a9a9a');
    return path;
  }

  Object.assign(gs, {arrowheads, drawLabels});
})();
