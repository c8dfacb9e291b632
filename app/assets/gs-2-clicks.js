// 4. A click on the DAG or the minimap, found by the page: see gs-0-core.js.
(function () {
  'use strict';
  const gs = window.graphscopePage = window.graphscopePage || {};

  const SLOP_PX = 4;    // a press that moves further is a drag (a pan), not a click
  const REACH_PX = 3;   // how far outside its marker a click still takes a node

  // The key of the node whose marker is under (px, py), plot-area pixels: the nearest centre
  // among those within reach, as Plotly's hover would pick; none where the click is on no
  // marker (Plotly's 20 px hover distance took a node 50 ids away at 100,000 nodes). Rings
  // and marks (hoverinfo "skip") and traces hidden from the legend are not nodes to take.
  function nodeAt(gd, px, py) {  // [key, x, y] or null
    const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis;
    // Linear axes: a pixel is _m * value + _b (Plotly's own l2p), inlined for 100,000 points.
    const [mx, bx, my, by] = [xa._m, xa._b, ya._m, ya._b];
    if (![mx, bx, my, by].every(Number.isFinite) || !Array.isArray(gd.data)) return null;
    let best = null, bestDistance = Infinity;
    gd._fullData.forEach((full, i) => {
      const t = gd.data[i];
      if (full.visible !== true || full.hoverinfo === 'skip' || !t.customdata || !t.x) return;
      const size = t.marker && t.marker.size;
      const xs = t.x, ys = t.y;
      for (let j = 0; j < xs.length; j++) {
        const dx = mx * xs[j] + bx - px;
        const reach = (Array.isArray(size) ? size[j] : size || 11) / 2 + REACH_PX;
        if (dx > reach || dx < -reach) continue;
        const dy = my * ys[j] + by - py;
        if (dy > reach || dy < -reach) continue;
        const distance = Math.hypot(dx, dy);
        if (distance <= reach && distance < bestDistance) {
          best = [t.customdata[j], xs[j], ys[j]];
          bestDistance = distance;
        }
      }
    });
    return best && typeof best[0] === 'string' ? best : null;
  }

  // One pair of listeners for the page, on whichever DAG plot is drawn now: a listener per
  // plot would keep each replaced plot (a 100,000-node one among them) alive in its closure.
  // where the left button went down on the DAG's plot or the minimap's, if it did
  let down = null;

  // Capture: before Plotly's own handlers, which start a drag on the plot.
  document.addEventListener('mousedown', (event) => {
    const plot = [gs.dagPlot(), gs.minimapOf()].find((p) => p && p.contains(event.target));
    down = event.button === 0 && plot ? [event.clientX, event.clientY, plot] : null;
  }, true);
  // On the document: once a press moves, Plotly covers the page with its drag layer.
  document.addEventListener('mouseup', (event) => {
    const start = down;
    down = null;
    const gd = gs.dagPlot();
    if (!start || !gd || event.button !== 0 || !window.dash_clientside) return;
    if (Math.hypot(event.clientX - start[0], event.clientY - start[1]) > SLOP_PX) return;
    const plot = start[2];
    const area = plot.querySelector('.nsewdrag');  // the plot area, where a drag starts
    if (!area || !plot._fullLayout || !gd._fullLayout || !gd._fullData) return;
    const box = area.getBoundingClientRect();
    const px = event.clientX - box.left, py = event.clientY - box.top;
    if (px < 0 || py < 0 || px > box.width || py > box.height) return;
    if (plot !== gd) {  // the minimap: the DAG's view centred there
      gs.centreOn(gd, plot._fullLayout.xaxis.p2l(px), plot._fullLayout.yaxis.p2l(py));
      return;
    }
    const found = nodeAt(gd, px, py);
    if (!found) return;
    // `at`: a second click on the same node is a change of the store too.
    window.dash_clientside.set_props('dag-pick', {data: {points: [{customdata: found[0]}],
                                                         at: Date.now()}});
    // The ring at once, where the server's answer will put it.
    if (gd.__gsRing) {
      gd.__gsRing = Object.assign({}, gd.__gsRing, {x: [found[1]], y: [found[2]]});
      gs.drawRing(gd);
    }
  }, true);

  Object.assign(gs, {nodeAt});
})();
