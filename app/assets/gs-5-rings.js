// 6. The selection rings of the DAG and the timeline, drawn by the page: see gs-0-core.js.
(function () {
  'use strict';
  const gs = window.graphscopePage = window.graphscopePage || {};
  const SHARED = window.graphscopeShared;
  const SVG = 'http://www.w3.org/2000/svg';

  // 6. The selection rings: see the top.
  const RING = SHARED.traces.ring;  // the ring trace's name

  // `data` with its ring trace swapped for an empty one: the same object for as long as the
  // ring looks the same, so that Plotly.react finds nothing changed. The ring kept to draw.
  function takeRing(gd, data) {
    const i = data.findIndex((t) => t && t.name === RING);
    if (i < 0) {
      gd.__gsRing = null;
      return data;
    }
    const ring = gd.__gsRing = data[i];
    const look = JSON.stringify([ring.type, ring.mode, ring.orientation, ring.marker,
                                 ring.hoverinfo, ring.showlegend]);
    if (!gd.__gsRingStub || gd.__gsRingLook !== look) {
      const none = {x: [], y: []};
      if (ring.base) none.base = [];
      gd.__gsRingStub = Object.assign({}, ring, none);
      gd.__gsRingLook = look;
    }
    const out = data.slice();
    out[i] = gd.__gsRingStub;
    return out;
  }

  // Whether the plot holds a ring trace not hidden. (Plotly counts the empty one it holds as
  // hidden, and leaves it out of the legend, as it did the ring of no node.)
  function ringShown(gd) {
    const t = gd.data ? gd.data.find((trace) => trace && trace.name === RING) : null;
    return !!t && t.visible !== false && t.visible !== 'legendonly';
  }

  // A ring's SVG element: `tag` at `place`, hollow, stroked as the ring trace's marker line.
  function outline(tag, line, place) {
    const element = document.createElementNS(SVG, tag);
    element.setAttribute('class', 'gs-ring');
    for (const [name, value] of Object.entries(place)) element.setAttribute(name, String(value));
    element.setAttribute('fill', 'none');
    element.setAttribute('stroke', line.color || '#d62728');
    element.setAttribute('stroke-width', String(line.width || 3));
    return element;
  }

  // The DAG's ring: a hollow circle round each of the trace's points.
  function ringMarks(gd) {
    const ring = gd.__gsRing;
    if (!ring || !Array.isArray(ring.x) || !ringShown(gd)) return [];
    const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis;
    const marker = ring.marker || {}, line = marker.line || {};
    return ring.x.map((x, j) => outline('circle', line, {
      cx: xa.l2p(x).toFixed(1), cy: ya.l2p(ring.y[j]).toFixed(1), r: (marker.size || 21) / 2,
    }));
  }

  // The DAG's ring moved, the labels' layer otherwise left as it is: a click's own frame
  // then repaints the ring alone, not every label and arrowhead.
  function drawRing(gd) {
    if (!gd._fullLayout || !gd._fullLayout.xaxis) return;
    const layer = gs.labelLayer(gd);
    if (!layer) return;
    for (const old of layer.querySelectorAll('.gs-ring')) old.remove();
    for (const ring of ringMarks(gd)) layer.appendChild(ring);
  }

  // The timeline's ring: an outline round each ringed bar (horizontal bars on category rows,
  // half a row thick: timeline.build_timeline's bargap).
  function drawBarRing(gd) {
    const full = gd._fullLayout;
    if (!full || !full.xaxis || !full.yaxis || !gd._fullData) return;
    const layer = gs.labelLayer(gd);
    if (!layer) return;
    const xa = full.xaxis, ya = full.yaxis;
    const ring = gd.__gsRing, bars = document.createDocumentFragment();
    if (ring && Array.isArray(ring.y) && ringShown(gd)) {
      const line = (ring.marker && ring.marker.line) || {};
      const half = Math.abs(ya.c2p(0.25) - ya.c2p(0));
      ring.y.forEach((row, j) => {
        const middle = ya.c2p(ya.d2c(row));
        const left = xa.l2p(ring.base[j]), right = xa.l2p(ring.base[j] + ring.x[j]);
        if (![middle, left, right].every(Number.isFinite)) return;
        bars.appendChild(outline('rect', line, {
          x: Math.min(left, right).toFixed(1), y: (middle - half).toFixed(1),
          width: Math.max(Math.abs(right - left), 1).toFixed(1), height: (2 * half).toFixed(1),
        }));
      });
    }
    layer.replaceChildren(bars);
  }

  function watchTimeline() {
    const gd = gs.timelinePlot();
    if (!gd || !gd._ev || gd.__gsRingWatch) return;
    const draw = () => drawBarRing(gd);
    gd.on('plotly_afterplot', draw);
    gd.on('plotly_react', () => setTimeout(draw, 0));
    gd.__gsRingWatch = true;
    draw();
  }

  Object.assign(gs, {drawBarRing, drawRing, outline, ringMarks, ringShown, takeRing, watchTimeline});
})();
