// The DAG's page script, split by feature (app/assets/gs-*.js, loaded in name order; every
// function is put on one namespace, window.graphscopePage, and called through it from the
// other files, so that each file holds one feature). What each part does and why:
//
// What the DAG does on the page itself, between the server's redraws.
//
// 1. The DAG's dcc.Graph answers every plotly_relayout (each wheel step and drag) by echoing the
//    new axis ranges into its `figure` prop, and that re-renders the graph with Plotly.react: the
//    same view drawn twice. No callback reads the DAG's relayoutData or the ranges in its figure
//    (`uirevision` keeps the user's view across the server's redraws), so the listener dcc.Graph
//    binds after its first plot is dropped. Measured on tiny-llama's 212 labelled nodes in
//    headless Chromium: a zoom took 217 ms with the echo and 85 ms without. The timeline keeps
//    its listener: the server redraws its bars for the x range it reports.
// 2. The node labels are drawn here, not by Plotly: each node trace carries its nodes' labels
//    in `meta`, and a layer of SVG text over the plot area shows those of the nodes in view
//    (never more than MOST): of every node of a graph of at most LABEL_LIMIT nodes, and of a
//    larger graph once a zoom leaves each node room for its label (layout.meta.labels says
//    which). Plotly measures each of its text labels on every redraw: on tiny-llama's 212
//    labelled nodes (benchmarks/bench_app.py) a zoom took 200 ms with Plotly's labels and
//    157 ms with this layer. The edges' arrowheads are drawn here too, as one path
//    (figure._edges): Plotly's arrow markers were most of what was left, and the zoom is now
//    84 ms. The layer follows a drag as it moves (plotly_relayouting).
// 3. The minimap (figure.minimap) shows the DAG's view as a rectangle over the whole graph; a
//    click on it centres the view there, at the same zoom (found here, as a DAG click is). A
//    graph that opens whole has none; one that opens in part has it in the DAG's right
//    margin, kept for it (layout.meta.minimap): over the plot it hid nodes and took their clicks.
// 4. A click on the DAG is answered here: the node under the pointer goes to the `dag-pick`
//    store, shaped as Plotly's click data, for the server's callback. The figure's clickmode
//    is "none" in the page: Plotly's click searched for the point again (a hover pass, and
//    its label drawn) before it said which, 23 to 42 ms of each click on tiny-llama, and the
//    clickData it set went through Dash's dependency pass before the request went out.
// 5. A WebGL view (over figure.SVG_LIMIT nodes; layout.meta.cull) is drawn culled: of each
//    trace of more than CULL_MIN points, Plotly is given only the points and edge segments
//    in a window around the view, the view and half of it again on each side; the page keeps
//    the whole figure and gives Plotly a new window once the view leaves the old one. Every
//    pan and zoom redrew every point: on the 100,064-node graph expanded, 1,262 nodes are in
//    the opening view, and Chromium without a GPU draws WebGL in software.
// 6. The selection rings, of the DAG and of the timeline, are drawn here too. The server moves
//    each figure's trace named "selected" by a patch on every click; Plotly is given that
//    trace empty, always the same object, so the patch redraws nothing in Plotly, and the page
//    draws the ring from the figure. Measured on tiny-llama in headless Chromium: each click's
//    patches had Plotly redraw the DAG (62 to 76 ms) and the timeline (136 to 233 ms), busy
//    until 325 to 455 ms after the click, and the next key press or click waited for that.
(function () {
  'use strict';
  const gs = window.graphscopePage = window.graphscopePage || {};
  const IDS = window.graphscopeShared.ids;
  const SVG = 'http://www.w3.org/2000/svg';

  // The layer over the plot area, made again if a new plot replaced the old one's container.
  function labelLayer(gd) {
    const holder = gd.querySelector('.svg-container');
    if (!holder) return null;
    let layer = holder.querySelector(':scope > svg.gs-labels');
    if (!layer) {
      layer = document.createElementNS(SVG, 'svg');
      layer.setAttribute('class', 'gs-labels');
      layer.style.cssText = 'position: absolute; pointer-events: none; overflow: hidden;';
    }
    // Over the plot, under Plotly's top layer (its hover labels, zoom box, menus): the second
    // of its main-svg elements, after the one that holds the plot.
    const top = holder.querySelectorAll(':scope > svg.main-svg')[1] || null;
    if (layer.nextSibling !== top || layer.parentNode !== holder) holder.insertBefore(layer, top);
    const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis;  // over the plot area
    Object.assign(layer.style, {left: xa._offset + 'px', top: ya._offset + 'px'});
    layer.setAttribute('width', xa._length);
    layer.setAttribute('height', ya._length);
    return layer;
  }

  function dagPlot() {
    return document.querySelector('#' + IDS.dag + ' .js-plotly-plot');
  }

  function minimapOf() {
    return document.querySelector('#' + IDS.minimap + ' .js-plotly-plot');
  }

  function timelinePlot() {
    return document.querySelector('#' + IDS.timeline + ' .js-plotly-plot');
  }

  Object.assign(gs, {dagPlot, labelLayer, minimapOf, timelinePlot});
})();
