// What the DAG does on the page itself, between the server's redraws.
//
// 1. The DAG's dcc.Graph answers every plotly_relayout (each wheel step and drag) by echoing the
//    new axis ranges into its `figure` prop, and that re-renders the graph with Plotly.react: the
//    same view drawn twice. No callback reads the DAG's relayoutData or the ranges in its figure
//    (`uirevision` keeps the user's view across the server's redraws), so the listener dcc.Graph
//    binds after its first plot is dropped. Measured on tiny-llama's 212 labelled nodes in
//    headless Chromium: a zoom took 217 ms with the echo and 85 ms without. The timeline keeps
//    its listener: the server redraws its bars for the x range it reports.
// 2. A graph drawn with more nodes than figure.py labels (LABEL_LIMIT) carries each node's label
//    in its trace's `meta`. Once a zoom leaves each node room for its label, the labels of the
//    nodes in view are drawn by the trace named ZOOM_LABELS: never more than MOST at once, so a
//    redraw stays as cheap as a small graph's.
// 3. The minimap (figure.minimap) shows the DAG's view as a rectangle over the whole graph; a
//    click on it centres the view there, at the same zoom.
(function () {
  'use strict';
  const ZOOM_LABELS = 'labels in view';  // figure.ZOOM_LABELS
  const MOST = 400;                      // labels drawn at once: figure.LABEL_LIMIT
  const ROOM_PX = 40;  // px per x unit: labels alternate above and below, so each has two units

  function labelsInView(gd) {
    const at = gd.data.findIndex((t) => t.name === ZOOM_LABELS);
    if (at < 0 || !gd._fullLayout || !gd._fullLayout.xaxis) return;
    const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis;
    const [x0, x1] = xa.range;
    const [ylo, yhi] = [Math.min(...ya.range), Math.max(...ya.range)];
    const xs = [], ys = [], texts = [], where = [];
    if (xa._length / Math.abs(x1 - x0) >= ROOM_PX) {
      scan: for (const t of gd.data) {
        if (!Array.isArray(t.meta) || !t.x) continue;
        for (let j = 0; j < t.x.length; j++) {
          const x = t.x[j], y = t.y[j];
          if (x < x0 || x > x1 || y < ylo || y > yhi) continue;
          if (xs.length === MOST) {  // too many to read: none, as when zoomed out
            xs.length = ys.length = texts.length = where.length = 0;
            break scan;
          }
          xs.push(x); ys.push(y); texts.push(t.meta[j]);
          where.push(Math.floor(x) % 2 === 0 ? 'bottom center' : 'top center');  // figure.py
        }
      }
    }
    const now = gd.data[at];
    if (!xs.length && !(now.x && now.x.length)) return;
    window.Plotly.restyle(gd, {x: [xs], y: [ys], text: [texts], textposition: [where]}, [at]);
  }

  function minimapOf() {
    return document.querySelector('#minimap .js-plotly-plot');
  }

  function showView(gd) {
    const mm = minimapOf();
    if (!mm || !mm._fullLayout || !mm.layout.shapes || !gd._fullLayout.xaxis) return;
    const [x0, x1] = gd._fullLayout.xaxis.range, [y0, y1] = gd._fullLayout.yaxis.range;
    // Shown only while part of the graph is out of view: over a whole graph it hides nodes.
    const [mx0, mx1] = mm.layout.xaxis.range, [my1, my0] = mm.layout.yaxis.range;
    const whole = Math.min(x0, x1) <= mx0 && Math.max(x0, x1) >= mx1 &&
      Math.min(y0, y1) <= my0 && Math.max(y0, y1) >= my1;
    document.getElementById('minimap').style.visibility = whole ? 'hidden' : 'visible';
    window.Plotly.relayout(mm, {
      'shapes[0].x0': x0, 'shapes[0].x1': x1, 'shapes[0].y0': y0, 'shapes[0].y1': y1,
      'shapes[0].visible': true,
    });
  }

  function centreOn(gd, x, y) {
    const [x0, x1] = gd._fullLayout.xaxis.range, [y0, y1] = gd._fullLayout.yaxis.range;
    const w = (x1 - x0) / 2, h = (y1 - y0) / 2;  // y1 < y0 on the reversed axis: h keeps it
    window.Plotly.relayout(gd, {'xaxis.range': [x - w, x + w], 'yaxis.range': [y - h, y + h]});
  }

  function watchMinimap(gd) {
    const mm = minimapOf();
    if (!mm || !mm._ev || mm.__graphscope === gd) return;
    mm.removeAllListeners('plotly_click');
    mm.on('plotly_click', (event) => {
      const point = event.points && event.points[0];
      if (point) centreOn(gd, point.x, point.y);
    });
    mm.on('plotly_react', () => setTimeout(() => showView(gd), 0));
    mm.__graphscope = gd;
    showView(gd);
  }

  function watch() {
    const gd = document.querySelector('#dag .js-plotly-plot');
    // dcc.Graph binds its listeners once per plot div, after its first Plotly.react; `_ev` is
    // the event emitter Plotly gives the div (its `on` and `removeAllListeners` wrap it).
    if (!gd || !gd._ev || gd._ev.listeners('plotly_relayout').length === 0) return;
    watchMinimap(gd);
    if (gd.__graphscope) return;  // ours is the only listener left
    gd.removeAllListeners('plotly_relayout');
    const viewed = () => {
      labelsInView(gd);
      showView(gd);
    };
    gd.on('plotly_relayout', viewed);
    // A new figure from the server (another file, a fold) may open another view.
    gd.on('plotly_react', () => setTimeout(viewed, 0));
    gd.__graphscope = true;
    viewed();
  }
  // A check costs one selector lookup; the DAG's div is made again when the page is.
  setInterval(watch, 200);
})();
