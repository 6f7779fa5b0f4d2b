// Lay the exported plan graphs out with dagre (compound graph) and ELK layered (hierarchical),
// run from a directory where `npm install @dagrejs/dagre elkjs` was run: node layout_packages.js DIR
const fs = require("fs");
const dagre = require("@dagrejs/dagre");
const ELK = require("elkjs/lib/elk.bundled.js");
const W = 196, H = 46, PAD = 10, LABEL = 18;
const dir = process.argv[2] || ".";
const graphs = JSON.parse(fs.readFileSync(dir + "/graphs.json"));
const elk = new ELK();
function dagreLayout(gr) {
  const g = new dagre.graphlib.Graph({ compound: true, multigraph: true });
  g.setGraph({ rankdir: "TB", nodesep: 18, ranksep: 46, marginx: 24, marginy: 24 });
  g.setDefaultEdgeLabel(() => ({}));
  for (const c of gr.clusters) g.setNode("c" + c.id, { label: "", paddingTop: LABEL + PAD, paddingLeft: PAD, paddingRight: PAD, paddingBottom: PAD });
  for (const n of gr.nodes) { g.setNode("n" + n.id, { width: W, height: H }); if (n.cluster !== null) g.setParent("n" + n.id, "c" + n.cluster); }
  gr.edges.forEach((e, i) => g.setEdge("n" + e[0], "n" + e[1], {}, "e" + i));
  dagre.layout(g);
  const nodes = {}, clusters = [];
  for (const n of gr.nodes) { const v = g.node("n" + n.id); nodes[n.id] = [v.x - v.width / 2, v.y - v.height / 2, v.width, v.height]; }
  for (const c of gr.clusters) { const v = g.node("c" + c.id); clusters.push([c.id, v.x - v.width / 2, v.y - v.height / 2, v.width, v.height]); }
  return { nodes, clusters };
}
async function elkLayout(gr) {
  const kids = {};
  const root = { id: "root", layoutOptions: { "elk.algorithm": "layered", "elk.direction": "DOWN", "elk.hierarchyHandling": "INCLUDE_CHILDREN", "elk.spacing.nodeNode": "18", "elk.layered.spacing.nodeNodeBetweenLayers": "46", "elk.padding": "[top=24,left=24,bottom=24,right=24]" }, children: [], edges: [] };
  for (const c of gr.clusters) { kids[c.id] = { id: "c" + c.id, children: [], layoutOptions: { "elk.padding": `[top=${LABEL + PAD},left=${PAD},bottom=${PAD},right=${PAD}]`, "elk.nodeSize.minimum": `(${c.label_w},20)`, "elk.nodeSize.constraints": "MINIMUM_SIZE" } }; root.children.push(kids[c.id]); }
  for (const n of gr.nodes) { const node = { id: "n" + n.id, width: W, height: H }; (n.cluster !== null ? kids[n.cluster].children : root.children).push(node); }
  gr.edges.forEach((e, i) => root.edges.push({ id: "e" + i, sources: ["n" + e[0]], targets: ["n" + e[1]] }));
  const out = await elk.layout(root);
  const nodes = {}, clusters = [];
  function walk(n, ox, oy) {
    for (const c of n.children || []) {
      const x = ox + c.x, y = oy + c.y;
      if (c.id[0] === "n") nodes[c.id.slice(1)] = [x, y, c.width, c.height];
      else { clusters.push([+c.id.slice(1), x, y, c.width, c.height]); walk(c, x, y); }
    }
  }
  walk(out, 0, 0);
  return { nodes, clusters };
}
(async () => {
  for (const gr of graphs) {
    let t = process.hrtime.bigint();
    for (let i = 0; i < 5; i++) gr.dagre = dagreLayout(gr);
    gr.dagre.ms = Number(process.hrtime.bigint() - t) / 5e6;
    await elkLayout(gr);  // warm up
    t = process.hrtime.bigint();
    for (let i = 0; i < 5; i++) gr.elk = await elkLayout(gr);
    gr.elk.ms = Number(process.hrtime.bigint() - t) / 5e6;
  }
  fs.writeFileSync(dir + "/layouts.json", JSON.stringify(graphs));
  console.log("done");
})();
