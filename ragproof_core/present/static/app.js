// The ragproof results browser's only script (ragproof serve / ragproof label). It reads
// the page's embedded JSON and builds the page with DOM calls. Stored text (datasets,
// questions, answers, chunks, judge replies, run and case ids) is hostile by assumption:
// it only ever becomes a text node or an attribute value; this file never assigns
// innerHTML, never sets an event attribute, and builds links only to the app's own
// paths, each part passed through encodeURIComponent.
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("app-data").textContent);
  var app = document.getElementById("app");
  function interval(ci) { return ci ? "[" + num(ci[0]) + ", " + num(ci[1]) + "]" : "–"; }
  function clipped(c) {
    if (!c) return el("span", { class: "sub" }, "(none)");
    return c.cut ? [c.t, el("span", { class: "sub" }, " … (" + c.cut + " more characters)")] : c.t;
  }
  // A link to one of the app's own pages: fixed path segments, encoded ids, encoded query.
  function href(segments, query) {
    var path = "/" + segments.map(encodeURIComponent).join("/");
    var parts = [];
    Object.keys(query || {}).forEach(function (k) {
      var v = query[k];
      if (v === null || v === undefined || v === "") return;
      parts.push(encodeURIComponent(k) + "=" + encodeURIComponent(String(v)));
    });
    return parts.length ? path + "?" + parts.join("&") : path;
  }
  function link(segments, query, text, attrs) {
    var a = el("a", attrs || null, text);
    a.setAttribute("href", href(segments, query));
    return a;
  }
  function section(id, title) {
    var s = el("section", { class: "card", id: id });
    if (title) s.appendChild(el("h2", null, title));
    app.appendChild(s);
    return s;
  }
  function nav() {
    app.appendChild(el("nav", { class: "top" },
      link(["runs"], null, "Runs"),
      link(["trends"], { dataset: data.dataset }, "Trends"),
      el("span", { class: "sub store" }, "store: ", data.store || "")));
  }
  function params() {
    var out = {};
    (window.location.search || "").replace(/^\?/, "").split("&").forEach(function (kv) {
      if (!kv) return;
      var i = kv.indexOf("=");
      var k = decodeURIComponent((i < 0 ? kv : kv.slice(0, i)).replace(/\+/g, " "));
      out[k] = i < 0 ? "" : decodeURIComponent(kv.slice(i + 1).replace(/\+/g, " "));
    });
    return out;
  }
  function facts(pairs) {
    return el("div", { class: "facts" }, pairs.map(function (p) {
      return el("div", { class: "fact" }, el("div", { class: "k" }, p[0]), el("div", { class: "v" }, p[1] === null || p[1] === undefined ? "–" : String(p[1])));
    }));
  }
  function table(id, headers, rows, numeric) {
    var t = el("table", { id: id });
    t.appendChild(el("thead", null, el("tr", null, headers.map(function (h, i) {
      return el("th", { class: numeric && numeric[i] ? "num" : null }, h);
    }))));
    var body = el("tbody");
    rows.forEach(function (r) { body.appendChild(r); });
    t.appendChild(body);
    return t;
  }
  function cell(value, isNum) { return el("td", { class: isNum ? "num" : null }, value === null || value === undefined ? "–" : value); }

  // --- runs ----------------------------------------------------------------------------
  var RUN_FILTERS = [
    ["dataset", "dataset", function (r) { return r.dataset; }],
    ["adapter", "adapter", function (r) { return r.adapter; }],
    ["judge", "judge", function (r) { return r.judge_model || "none"; }],
    ["k", "k", function (r) { return r.k === null ? "–" : String(r.k); }],
    ["source_match", "source match", function (r) { return r.source_match || "–"; }],
    ["mode", "judge mode", function (r) { return r.judge_mode || "–"; }]
  ];
  var FIRST_ROWS = 100;
  function runsPage() {
    nav();
    var head = section("runs-head", null);
    head.appendChild(el("h1", null, "Runs"));
    var runs = data.runs.slice().reverse(); // newest first
    var initial = params();
    var bar = el("div", { class: "filters" });
    var selects = {};
    RUN_FILTERS.forEach(function (f) {
      var values = {};
      runs.forEach(function (r) { values[f[2](r)] = true; });
      var s = el("select", { id: "filter-" + f[0], "aria-label": f[1] }, el("option", { value: "" }, "any " + f[1]));
      Object.keys(values).sort().forEach(function (v) { s.appendChild(el("option", { value: v }, v)); });
      if (initial[f[0]] && values[initial[f[0]]]) s.value = initial[f[0]];
      s.addEventListener("change", apply);
      selects[f[0]] = s;
      bar.appendChild(el("label", null, f[1] + " ", s));
    });
    var count = el("span", { id: "run-count", class: "sub" });
    bar.appendChild(count);
    var compareButton = el("button", { id: "compare-selected", type: "button" }, "Compare A with B");
    bar.appendChild(compareButton);
    head.appendChild(bar);
    function runRow(r) {
      var tr = el("tr", { class: "run-row", "data-run": r.run_id },
        el("td", null, el("input", { type: "radio", name: "run-a", value: r.run_id, "aria-label": "A" })),
        el("td", null, el("input", { type: "radio", name: "run-b", value: r.run_id, "aria-label": "B" })),
        el("td", { class: "mono" }, link(["runs", r.run_id], null, r.run_id)),
        cell(r.started_at.slice(0, 19).replace("T", " ")),
        el("td", null, link(["trends"], { dataset: r.dataset }, r.dataset)),
        cell(r.adapter),
        cell(r.k, true),
        cell(r.source_match),
        cell(r.judge_model || "none"),
        cell(r.judge_mode),
        cell(r.status),
        cell(r.cases, true),
        cell(r.cost_usd === null ? "unknown" : "$" + Number(r.cost_usd).toFixed(4), true));
      tr._run = r;
      return tr;
    }
    // The newest runs at once; the rest once the page has been painted.
    var rows = runs.slice(0, FIRST_ROWS).map(runRow);
    var list = section("runs", null);
    list.classList.add("wide");
    list.appendChild(table("runs-table",
      ["A", "B", "run id", "started (UTC)", "dataset", "adapter", "k", "source match", "judge", "judge mode", "status", "cases", "cost"],
      rows, [0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 1]));
    function apply() {
      var shown = 0;
      rows.forEach(function (tr) {
        var ok = RUN_FILTERS.every(function (f) { var v = selects[f[0]].value; return !v || f[2](tr._run) === v; });
        tr.hidden = !ok;
        if (ok) shown++;
      });
      count.textContent = shown + " of " + rows.length + " runs";
    }
    compareButton.addEventListener("click", function () {
      var a = document.querySelector("input[name='run-a']:checked");
      var b = document.querySelector("input[name='run-b']:checked");
      if (!a || !b) { count.textContent = "pick run A and run B to compare"; return; }
      window.location.href = href(["compare"], { a: a.value, b: b.value });
    });
    apply();
    // CONTRACT section 31: a page of runs at a time, the newest first.
    if (data.page) {
      var p = data.page, pager = el("p", { class: "pager" });
      if (p.offset > 0) pager.appendChild(link(["runs"], { offset: Math.max(0, p.offset - p.limit) }, "← newer runs", { id: "runs-newer" }));
      if (p.offset + p.limit < p.total) pager.appendChild(link(["runs"], { offset: p.offset + p.limit }, " older runs →", { id: "runs-older" }));
      pager.appendChild(el("span", { class: "sub" }, " runs " + (p.total ? p.offset + 1 : 0) + "–" + Math.min(p.total, p.offset + p.limit) + " of " + p.total));
      list.appendChild(pager);
    }
    if (runs.length <= FIRST_ROWS) return null;
    return function () {
      var body = document.querySelector("#runs-table tbody");
      runs.slice(FIRST_ROWS).forEach(function (r) {
        var tr = runRow(r);
        rows.push(tr);
        body.appendChild(tr);
      });
      apply();
    };
  }

  // --- one run -------------------------------------------------------------------------
  function runPage() {
    nav();
    var r = data.run;
    var head = section("run-head", null);
    head.appendChild(el("h1", null, "Run ", el("span", { id: "run-id", class: "mono" }, r.run_id)));
    head.appendChild(facts([
      ["dataset", r.dataset], ["adapter", r.adapter], ["status", r.status + (r.judge_failures ? " · " + r.judge_failures : "")], ["started (UTC)", r.started_at.slice(0, 19).replace("T", " ")],
      ["k", r.k], ["source match", r.source_match], ["judge", r.judge_model || "none"], ["judge mode", r.judge_mode],
      ["cases", r.cases], ["case failures", r.case_failures], ["cost", r.cost_usd === null ? "unknown" : "$" + Number(r.cost_usd).toFixed(4)]
    ]));
    head.appendChild(el("p", { class: "actions" },
      link(["runs", r.run_id, "report"], null, "Report", { id: "report-link" }), " · ",
      link(["runs", r.run_id, "cases"], null, "Search cases", { id: "cases-link" }), " · ",
      link(["label", r.run_id], null, "Label cases", { id: "label-link" }), " · ",
      link(["trends"], { dataset: r.dataset }, "Trend of this dataset", { id: "trend-link" })));
    var m = section("metrics", "Metrics");
    m.appendChild(table("metrics-table",
      ["metric", "mean", "scored", "skipped", "errors", "labels", "corrected mean (PPI)", "PPI 95% CI"],
      data.metrics.map(function (s) {
        var lab = (data.labels || {})[s.metric] || {};
        return el("tr", { "data-metric": s.metric }, cell(s.metric), cell(num(s.mean), true), cell(s.scored, true),
          cell(s.skipped, true), cell(s.errored, true), cell(lab.labels === undefined ? "–" : lab.labels, true),
          cell(num(lab.ppi_mean), true), cell(interval(lab.ppi_ci), true));
      }), [0, 1, 1, 1, 1, 1, 1, 1]));
    if (data.probes && data.probes.length) {
      var p = section("probes", "Latest judge bias probe");
      p.appendChild(el("p", { class: "sub" }, "ragproof probe of " + data.probes[0].judge_model + " at " +
        data.probes[0].created_at.slice(0, 19).replace("T", " ") + " UTC: how many verdicts changed band when the material was perturbed (Wilson 95% interval)."));
      p.appendChild(table("probes-table", ["metric", "perturbation", "cases", "changed", "share", "95% CI"],
        data.probes.map(function (row) {
          return el("tr", null, cell(row.metric), cell(row.perturbation), cell(row.cases, true), cell(row.changed, true),
            cell(num(row.share, 3), true), cell(row.ci_low === null ? "–" : "[" + num(row.ci_low, 3) + ", " + num(row.ci_high, 3) + "]", true));
        }), [0, 0, 1, 1, 1, 1]));
    }
    var c = section("compare-with", "Compare with another run");
    var others = data.others || [];
    if (!others.length) { c.appendChild(el("p", { class: "sub" }, "No other run of this dataset.")); return; }
    var pick = el("select", { id: "compare-base", "aria-label": "baseline run" });
    others.forEach(function (o) { pick.appendChild(el("option", { value: o }, o)); });
    var go = el("button", { id: "compare-go", type: "button" }, "Compare (this run as B)");
    go.addEventListener("click", function () { window.location.href = href(["compare"], { a: pick.value, b: r.run_id }); });
    c.appendChild(el("p", null, "Baseline A: ", pick, " ", go));
  }

  // --- trends --------------------------------------------------------------------------
  // Up to this many runs each point is its own element with a hover title; beyond,
  // each layer (line, intervals, dots) is one path, so 1,000 runs stay a few elements.
  var POINT_ELEMENTS = 200;
  function chart(metric, runs) {
    var W = 560, H = 170, L = 40, R = 10, T = 10, B = 24;
    var n = Math.max(runs.length, 1);
    function x(i) { return L + (n === 1 ? (W - L - R) / 2 : i * (W - L - R) / (n - 1)); }
    function y(v) { return T + (1 - v) * (H - T - B); }
    function xy(i, v) { return x(i).toFixed(1) + "," + y(v).toFixed(1); }
    var g = svg("svg", { width: W, height: H, viewBox: "0 0 " + W + " " + H, class: "trend", role: "img" });
    [0, 0.5, 1].forEach(function (v) {
      g.appendChild(svg("line", { x1: L, x2: W - R, y1: y(v), y2: y(v), class: "grid" }));
      g.appendChild(svg("text", { x: L - 6, y: y(v) + 4, "text-anchor": "end", class: "axis" }, String(v)));
    });
    var points = metric.points;
    var path = points.map(function (p, i) { return (i ? "L" : "M") + xy(p.run, p.mean); }).join(" ");
    if (path) g.appendChild(svg("path", { d: path, class: "line" }));
    if (points.length > POINT_ELEMENTS) {
      var cis = points.filter(function (p) { return p.ci; }).map(function (p) { return "M" + xy(p.run, p.ci[1]) + " L" + xy(p.run, p.ci[0]); });
      if (cis.length) g.appendChild(svg("path", { d: cis.join(" "), class: "ci" }));
      g.appendChild(svg("path", { d: points.map(function (p) { return "M" + xy(p.run, p.mean) + " h0.01"; }).join(" "), class: "dots" }));
      return g;
    }
    points.forEach(function (p) {
      var runId = runs[p.run].run_id;
      var grp = svg("g", { class: "point", "data-run": runId });
      if (p.ci) grp.appendChild(svg("line", { x1: x(p.run), x2: x(p.run), y1: y(p.ci[1]), y2: y(p.ci[0]), class: "ci" }));
      grp.appendChild(svg("circle", { cx: x(p.run), cy: y(p.mean), r: 3 },
        svg("title", null, runId + ": " + num(p.mean) + " " + interval(p.ci) + ", n = " + p.n)));
      g.appendChild(grp);
    });
    return g;
  }
  function trendsPage() {
    nav();
    var head = section("trends-head", null);
    head.appendChild(el("h1", null, "Trends: ", el("span", { id: "trend-dataset" }, data.dataset)));
    var pick = el("select", { id: "trend-pick", "aria-label": "dataset" });
    data.datasets.forEach(function (d) { pick.appendChild(el("option", { value: d }, d)); });
    pick.value = data.dataset;
    pick.addEventListener("change", function () { window.location.href = href(["trends"], { dataset: pick.value }); });
    head.appendChild(el("p", null, "Dataset ", pick, el("span", { class: "sub" }, " " + data.runs.length + " runs, oldest left. Interval: " + data.interval)));
    var grid = el("div", { class: "trend-grid", id: "trend-grid" });
    app.appendChild(grid);
    data.metrics.forEach(function (m) {
      var s = el("section", { class: "card trend-card", "data-metric": m.metric });
      var last = m.points.length ? m.points[m.points.length - 1] : null;
      s.appendChild(el("h2", null, m.metric, el("span", { class: "dir" }, m.higher_is_better ? " (higher is better)" : " (lower is better)")));
      s.appendChild(el("p", { class: "sub latest" }, last ? "latest " + data.runs[last.run].run_id + ": " + num(last.mean) + " " + interval(last.ci) + ", n = " + last.n : "never scored"));
      s.appendChild(chart(m, data.runs));
      grid.appendChild(s);
    });
    if (!data.metrics.length) section("no-trend", null).appendChild(el("p", { class: "sub" }, "No scored metric in these runs."));
  }

  // --- compare ---------------------------------------------------------------------------
  function comparePage() {
    nav();
    var head = section("compare-head", null);
    head.appendChild(el("h1", null, "Compare"));
    head.appendChild(facts([["A (baseline)", data.a.run_id], ["B", data.b.run_id], ["dataset A", data.a.dataset], ["dataset B", data.b.dataset],
      ["judge A", data.a.judge_model || "none"], ["judge B", data.b.judge_model || "none"]]));
    head.appendChild(el("p", null, link(["runs", data.b.run_id, "report"], { against: data.a.run_id, allow_mixed_judges: data.allow_mixed_judges ? "1" : "" }, "Side-by-side report (B against A)", { id: "against-link" })));
    if (data.refused) {
      var r = section("refused", "Not compared");
      r.appendChild(el("pre", { class: "error" }, data.refused));
      if (data.mixed_judges) r.appendChild(el("p", null, link(["compare"], { a: data.a.run_id, b: data.b.run_id, allow_mixed: "1" }, "Compare anyway (flagged)", { id: "allow-mixed" })));
      return;
    }
    var cmp = data.comparison;
    if (cmp.mixed_judges) head.appendChild(el("p", { class: "badge bad" }, "mixed judges: " + cmp.judge_differences.join("; ")));
    var s = section("comparison", "Paired statistics (" + Math.round(cmp.confidence * 100) + "% intervals, alpha " + cmp.alpha + ")");
    var names = Object.keys(cmp.metrics);
    s.appendChild(table("comparison-table",
      ["metric", "paired n", "mean A", "mean B", "B − A", "95% CI", "p", "adjusted p", "MDE", "verdict"],
      names.map(function (name) {
        var m = cmp.metrics[name];
        return el("tr", { "data-metric": name, class: "verdict-" + String(m.verdict).replace(/[^a-z]+/g, "-") }, cell(name), cell(m.paired, true),
          cell(num(m.mean_a), true), cell(num(m.mean_b), true), cell(signed(m.delta), true),
          cell(m.ci_low === null ? "–" : "[" + num(m.ci_low) + ", " + num(m.ci_high) + "]", true),
          cell(num(m.p_value), true), cell(num(m.p_adjusted), true), cell(num(m.mde), true), cell(m.verdict));
      }), [0, 1, 1, 1, 1, 1, 1, 1, 1, 0]));
    if (cmp.regressions.length) {
      var g = section("regressions", "Cases that got worse");
      g.appendChild(table("regressions-table", ["metric", "case", "A", "B", "B − A"], cmp.regressions.map(function (x) {
        return el("tr", null, cell(x.metric), cell(x.case_id), cell(num(x.value_a), true), cell(num(x.value_b), true), cell(signed(x.delta), true));
      }), [0, 0, 1, 1, 1]));
    }
  }

  // --- case search -----------------------------------------------------------------------
  function casesPage() {
    nav();
    var q = data.query;
    var head = section("cases-head", null);
    head.appendChild(el("h1", null, "Cases of ", link(["runs", data.run_id], null, data.run_id)));
    var form = el("form", { method: "get", id: "case-form", class: "filters" });
    form.setAttribute("action", href(["runs", data.run_id, "cases"]));
    var text = el("input", { type: "search", name: "q", id: "case-q", placeholder: "text in id, question or answer", "aria-label": "search text" });
    text.value = q.text;
    var metric = el("select", { name: "metric", id: "case-metric", "aria-label": "metric" }, el("option", { value: "" }, "any metric"));
    data.metrics.forEach(function (m) { metric.appendChild(el("option", { value: m }, m)); });
    metric.value = q.metric;
    var status = el("select", { name: "status", id: "case-status", "aria-label": "status" }, el("option", { value: "" }, "any status"));
    data.statuses.forEach(function (s) { status.appendChild(el("option", { value: s }, s)); });
    status.value = q.status;
    form.appendChild(el("label", null, "Search ", text));
    form.appendChild(el("label", null, "metric ", metric));
    form.appendChild(el("label", null, "status ", status));
    form.appendChild(el("button", { type: "submit", id: "case-go" }, "Find"));
    head.appendChild(form);
    var to = Math.min(q.offset + data.cases.length, data.total);
    head.appendChild(el("p", { id: "case-total", class: "sub" }, data.total ? (q.offset + 1) + "–" + to + " of " + data.total + " matching cases" : "0 matching cases"));
    var s = section("case-results", null);
    var shown = q.metric ? [q.metric] : data.metrics;
    s.appendChild(table("case-table", ["case", "kind", "question", "answer", "results"], data.cases.map(function (c) {
      return el("tr", { class: "case-row", "data-case": c.id }, el("td", { class: "mono" }, c.id), cell(c.kind),
        el("td", { class: "question" }, clipped(c.question)), el("td", { class: "answer" }, clipped(c.answer)),
        el("td", { class: "results" }, shown.filter(function (m) { return c.results[m]; }).map(function (m) {
          var r = c.results[m];
          var cls = r[0] === "scored" ? "" : r[0] === "error" || r[0] === "judge_error" ? " bad" : " warn";
          return el("span", { class: "badge" + cls, title: m }, m + " " + (r[0] === "scored" ? num(r[1]) : r[0]));
        })));
    })));
    var pager = el("p", { class: "pager" });
    if (q.offset > 0) pager.appendChild(link(["runs", data.run_id, "cases"], { q: q.text, metric: q.metric, status: q.status, offset: Math.max(0, q.offset - q.limit) }, "← previous", { id: "case-prev" }));
    if (to < data.total) pager.appendChild(link(["runs", data.run_id, "cases"], { q: q.text, metric: q.metric, status: q.status, offset: q.offset + q.limit }, " next →", { id: "case-next" }));
    s.appendChild(pager);
  }

  // --- labelling -------------------------------------------------------------------------
  function labelPage() {
    nav();
    var head = section("label-head", null);
    head.appendChild(el("h1", null, "Label ", link(["runs", data.run_id], null, data.run_id)));
    var who = el("input", { id: "annotator", type: "text", "aria-label": "annotator", maxlength: 64 });
    who.value = data.annotator;
    var switchWho = el("button", { id: "annotator-go", type: "button" }, "Switch annotator");
    switchWho.addEventListener("click", function () {
      window.location.href = href(["label", data.run_id], { metric: data.metric, sample: data.sample, seed: data.seed, annotator: who.value });
    });
    head.appendChild(el("p", { class: "filters" }, el("label", null, "Annotator ", who), switchWho,
      el("span", { id: "progress", class: "sub" }, data.done + " of " + data.total + " labelled by this annotator")));
    head.appendChild(tally(data.tally));
    var c = data.case;
    if (!c) {
      section("label-done", "All done").appendChild(el("p", { id: "label-finished" }, "Every sampled case has your label. Thank you."));
      document.body.setAttribute("data-label-state", "finished");
      return;
    }
    var s = section("label-case", null);
    s.setAttribute("data-case", c.case_id);
    s.setAttribute("data-metric", c.metric);
    s.appendChild(el("h2", null, "Case ", el("span", { class: "mono", id: "label-case-id" }, c.case_id), " · ", el("span", { id: "label-metric" }, c.metric)));
    s.appendChild(el("p", { class: "sub" }, c.instruction));
    if (c.history.length) {
      // A conversation's later turn: the earlier turns the judge read first.
      s.appendChild(el("h3", null, "Earlier turns of the conversation"));
      s.appendChild(table("label-history", ["role", "message"], c.history.map(function (m) {
        return el("tr", null, el("td", { class: "mono" }, m.role), el("td", { class: "text" }, m.content));
      })));
    }
    s.appendChild(el("h3", null, "Question"));
    s.appendChild(el("pre", { class: "question" }, c.question));
    s.appendChild(el("h3", null, "Answer"));
    s.appendChild(el("pre", { class: "answer" }, c.answer === null ? "(no answer)" : c.answer));
    s.appendChild(el("h3", null, "Context the judge saw"));
    s.appendChild(table("label-context", ["#", "id", "text"], c.context.map(function (ch, i) {
      return el("tr", null, cell(String(i + 1), true), el("td", { class: "mono" }, ch.id), el("td", { class: "text" }, ch.text));
    })));
    var bands = el("div", { id: "bands", class: "bands" });
    data.bands.forEach(function (b) {
      var button = el("button", { type: "button", class: "band", "data-score": b.score }, el("kbd", null, b.key), " " + b.label);
      button.addEventListener("click", function () { score(b.score); });
      bands.appendChild(button);
    });
    s.appendChild(el("h3", null, "Your score"));
    s.appendChild(bands);
    var verdict = el("div", { id: "verdict", hidden: true });
    s.appendChild(verdict);
    var status = el("p", { id: "label-status", class: "sub" }, "Keys: " + data.bands.map(function (b) { return b.key + " = " + b.label; }).join(", ") + "; Enter = next case.");
    s.appendChild(status);
    var sent = false;
    var nextButton = null;
    function score(value) {
      if (sent) return;
      sent = true;
      Array.prototype.forEach.call(bands.querySelectorAll("button"), function (b) { b.disabled = true; });
      status.textContent = "saving…";
      fetch("/api/labels", {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ run_id: data.run_id, case_id: c.case_id, metric: c.metric, score: value, annotator: data.annotator,
          sample: data.sample, seed: data.seed, metric_filter: data.metric })
      }).then(function (response) {
        return response.json().then(function (body) { return { ok: response.ok, body: body }; });
      }).then(function (res) {
        if (!res.ok) { status.textContent = "not saved: " + (res.body.error || "error"); sent = false; return; }
        var b = res.body;
        verdict.hidden = false;
        verdict.appendChild(el("h3", null, "The judge's verdict"));
        verdict.appendChild(facts([["your score", num(value, 2)], ["judge score", num(b.judge_score, 2)], ["agree", b.agree ? "yes" : "no"]]));
        if (b.judge_reason) verdict.appendChild(el("pre", { class: "judge-reason" }, b.judge_reason));
        head.replaceChild(tally(b.tally), document.getElementById("label-tally"));
        nextButton = el("button", { id: "label-next", type: "button" }, "Next case (Enter)");
        nextButton.addEventListener("click", function () { window.location.reload(); });
        verdict.appendChild(nextButton);
        document.getElementById("progress").textContent = (data.done + 1) + " of " + data.total + " labelled by this annotator";
        status.textContent = "saved";
        document.body.setAttribute("data-label-state", "scored");
      }, function (err) { status.textContent = "not saved: " + err; sent = false; });
    }
    document.addEventListener("keydown", function (ev) {
      if (ev.target && ev.target.tagName === "INPUT") return;
      if (ev.key === "Enter" && nextButton) { ev.preventDefault(); window.location.reload(); return; }
      data.bands.forEach(function (b) { if (ev.key === b.key) { ev.preventDefault(); score(b.score); } });
    });
    document.body.setAttribute("data-label-state", "waiting");
  }
  function tally(rows) {
    return table("label-tally", ["metric", "labels", "annotators", "judge mean", "corrected mean (PPI)", "PPI 95% CI"],
      (rows || []).map(function (t) {
        return el("tr", { "data-metric": t.metric }, cell(t.metric), cell(t.labels, true), cell(t.annotators, true),
          cell(num(t.judge_mean), true), cell(num(t.ppi_mean), true), cell(interval(t.ppi_ci), true));
      }), [0, 1, 1, 1, 1, 1]);
  }

  function problemPage() {
    nav();
    var s = section("problem", data.title);
    s.appendChild(el("pre", { class: "error" }, data.message));
  }

  var PAGES = { runs: runsPage, run: runPage, trends: trendsPage, compare: comparePage, cases: casesPage, label: labelPage, problem: problemPage };
  // A page may leave work for after its first paint; it is drawn once that is done.
  var later = PAGES[data.page]();
  function drawn() { document.body.setAttribute("data-ready", "1"); }
  if (typeof later === "function") {
    requestAnimationFrame(function () { setTimeout(function () { later(); drawn(); }, 0); });
  } else {
    drawn();
  }
})();
