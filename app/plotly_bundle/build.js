const esbuild = require('esbuild');
const { environmentPlugin } = require('esbuild-plugin-environment');
const { glsl } = require('esbuild-plugin-glsl');
const InlineCSSPlugin = require('esbuild-plugin-inline-css');
esbuild.build({
  entryPoints: ['entry.js'], outfile: '../assets/plotly-graphscope.min.js', format: 'iife', bundle: true, minify: true,
  plugins: [InlineCSSPlugin(), glsl({ minify: true }), environmentPlugin({ NODE_DEBUG: false })],
  alias: { regl: '@plotly/regl', stream: 'stream-browserify' },
  define: { global: 'window', 'define.amd': 'false' }, target: 'es2016', logLevel: 'warning',
}).catch(() => process.exit(1));
