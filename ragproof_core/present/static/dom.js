// DOM helpers shared by the report's and the results browser's scripts (each page's
// script is this file followed by its own). Text only ever becomes a text node or an
// attribute value: nothing here parses markup or sets an event attribute.
function el(tag, attrs) {
  var node = document.createElement(tag);
  setAttrs(node, attrs);
  for (var i = 2; i < arguments.length; i++) add(node, arguments[i]);
  return node;
}
function setAttrs(node, attrs) {
  if (!attrs) return;
  Object.keys(attrs).forEach(function (k) {
    if (attrs[k] === null || attrs[k] === undefined || attrs[k] === false) return;
    if (k === "class") node.className = attrs[k];
    else node.setAttribute(k, String(attrs[k]));
  });
}
function add(node, child) {
  if (child === null || child === undefined || child === false) return;
  if (Array.isArray(child)) { child.forEach(function (c) { add(node, c); }); return; }
  if (typeof child === "string" || typeof child === "number") child = document.createTextNode(String(child));
  node.appendChild(child);
}
var SVGNS = "http://www.w3.org/2000/svg";
function svg(tag, attrs) {
  var node = document.createElementNS(SVGNS, tag);
  Object.keys(attrs || {}).forEach(function (k) { node.setAttribute(k, String(attrs[k])); });
  for (var i = 2; i < arguments.length; i++) {
    var c = arguments[i];
    if (typeof c === "string") c = document.createTextNode(c);
    if (c) node.appendChild(c);
  }
  return node;
}
function num(x, d) { return x === null || x === undefined ? "–" : Number(x).toFixed(d === undefined ? 4 : d); }
function signed(x) { return x === null || x === undefined ? "–" : (x >= 0 ? "+" : "") + Number(x).toFixed(4); }
// Metrics with nothing scored (CONTRACT section 25): their rows and columns carry the
// class "unscored" and stay hidden (report.css) until the person asks for them, which
// puts "all-metrics" on the body. The button that does it, or null when none is hidden.
function unscoredToggle(count) {
  if (!count) return null;
  var b = el("button", { type: "button", class: "unscored-toggle" });
  function label() {
    var shown = document.body.classList.contains("all-metrics");
    b.textContent = (shown ? "Hide the " : "Show the ") + count + " metric" + (count === 1 ? "" : "s") + " with nothing scored";
  }
  b.addEventListener("click", function () {
    document.body.classList.toggle("all-metrics");
    Array.prototype.forEach.call(document.querySelectorAll("button.unscored-toggle"), function (o) { o.dispatchEvent(new Event("relabel")); });
  });
  b.addEventListener("relabel", label);
  label();
  return b;
}
