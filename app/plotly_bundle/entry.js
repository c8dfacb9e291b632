// graphscope's plotly.js: only the traces the dashboard draws (scatter, scattergl, bar).
var Plotly = require('plotly.js/lib/core');
Plotly.register([require('plotly.js/lib/scatter'), require('plotly.js/lib/scattergl'), require('plotly.js/lib/bar')]);
window.Plotly = Plotly;
