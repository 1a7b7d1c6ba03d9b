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
      // A third element marks the value as bad news.
      return el("div", { class: "fact" }, el("div", { class: "k" }, p[0]), el("div", { class: "v" + (p[2] ? " bad" : "") }, p[1] === null || p[1] === undefined ? "–" : String(p[1])));
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
  function tagList(tags) { return Object.keys(tags || {}).sort().map(function (k) { return k + "=" + tags[k]; }); }
  function shortAdapter(a) { return String(a).split(":").pop().split(".").pop(); }
  function started(r) { return r.started_at.slice(0, 16).replace("T", " "); }
  function digest(r) { return r.config_digest ? r.config_digest.slice(0, 8) : "–"; }
  // A run as people name it: its name above its id.
  function runLabel(r) {
    return [r.name ? el("div", { class: "run-name" }, r.name) : null, el("div", { class: "mono run-id" }, r.run_id)];
  }
  function statusCell(r) {
    return el("td", null, el("span", { class: r.status === "completed" ? null : "badge warn" }, r.status),
      r.judge_errors ? el("div", null, el("span", { class: "badge bad judge-errors" }, r.judge_errors + " judge error" + (r.judge_errors === 1 ? "" : "s"))) : null);
  }
  var RUN_FILTERS = [
    ["dataset", "dataset", function (r) { return [r.dataset]; }],
    ["adapter", "adapter", function (r) { return [r.adapter]; }],
    ["name", "name", function (r) { return [r.name || "–"]; }],
    ["tag", "tag", function (r) { return tagList(r.tags); }],
    ["judge", "judge", function (r) { return [r.judge_model || "none"]; }],
    ["k", "k", function (r) { return [r.k === null ? "–" : String(r.k)]; }],
    ["source_match", "source match", function (r) { return [r.source_match || "–"]; }],
    ["mode", "judge mode", function (r) { return [r.judge_mode || "–"]; }]
  ];
  // A screenful of rows before the first paint, the rest of the page's runs just after
  // it: a page of 50 paints as soon as one of 10 (each row is a dozen cells to build,
  // style and lay out before anything shows).
  var FIRST_ROWS = 20;
  function runsPage() {
    nav();
    var head = section("runs-head", null);
    head.appendChild(el("h1", null, "Runs"));
    var runs = data.runs.slice().reverse(); // newest first
    var initial = params();
    // The server filtered the runs in the catalog (data.filters); a page that holds every
    // run filters its rows at once, any other asks the server for the runs that match.
    var chosen = data.filters || {};
    var paging = data.paging || { offset: 0, total: runs.length };
    var whole = !Object.keys(chosen).length && !paging.offset && paging.total <= runs.length;
    var bar = el("div", { class: "filters" });
    var selects = {};
    RUN_FILTERS.forEach(function (f) {
      var values = {};
      runs.forEach(function (r) { f[2](r).forEach(function (v) { values[v] = true; }); });
      // Every run's values: every dataset, and each filter's once the server filtered.
      (f[0] === "dataset" ? data.datasets || [] : (data.options || {})[f[0]] || []).forEach(function (v) { values[v] = true; });
      if (chosen[f[0]]) values[chosen[f[0]]] = true;
      var s = el("select", { id: "filter-" + f[0], "aria-label": f[1] }, el("option", { value: "" }, "any " + f[1]));
      Object.keys(values).sort().forEach(function (v) { s.appendChild(el("option", { value: v }, v)); });
      if (initial[f[0]] && values[initial[f[0]]]) s.value = initial[f[0]];
      s.addEventListener("change", whole ? apply : refilter);
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
        el("td", { class: "run" }, link(["runs", r.run_id], null, runLabel(r))),
        cell(started(r)),
        el("td", { class: "clip", title: r.dataset }, link(["trends"], { dataset: r.dataset }, r.dataset)),
        el("td", { class: "clip", title: r.adapter }, shortAdapter(r.adapter)),
        cell("k " + (r.k === null ? "–" : r.k) + " · " + (r.source_match || "–") + (r.metric_count === null ? "" : " · " + r.metric_count + " metrics")),
        el("td", { class: "clip", title: r.judge_model || "none" }, r.judge_model || "none", r.judge_mode ? el("div", { class: "dir" }, r.judge_mode) : null),
        statusCell(r),
        cell(r.cases, true),
        cell(r.cost_usd === null ? "unknown" : "$" + Number(r.cost_usd).toFixed(4), true),
        el("td", { class: "mono", title: r.config_digest || "stored before runs had a config digest" }, digest(r)),
        el("td", { class: "tags" }, tagList(r.tags).map(function (t) { return el("span", { class: "badge tag" }, t); })));
      tr._run = r;
      return tr;
    }
    // The newest runs at once; the rest once the page has been painted.
    var rows = runs.slice(0, FIRST_ROWS).map(runRow);
    var list = section("runs", null);
    list.appendChild(table("runs-table",
      ["A", "B", "run", "started (UTC)", "dataset", "adapter", "settings", "judge", "status", "cases", "cost", "config", "tags"],
      rows, [0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0, 0]));
    function filtered() {
      var query = {};
      RUN_FILTERS.forEach(function (f) { if (selects[f[0]].value) query[f[0]] = selects[f[0]].value; });
      return query;
    }
    function refilter() {
      apply();
      window.location.href = href(["runs"], filtered());
    }
    function apply() {
      var shown = 0;
      rows.forEach(function (tr) {
        var ok = RUN_FILTERS.every(function (f) { var v = selects[f[0]].value; return !v || f[2](tr._run).indexOf(v) >= 0; });
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
    if (data.paging) {
      var p = data.paging, pager = el("p", { class: "pager" });
      if (p.offset > 0) pager.appendChild(link(["runs"], Object.assign({}, chosen, { offset: Math.max(0, p.offset - p.limit) }), "← newer runs", { id: "runs-newer" }));
      if (p.offset + p.limit < p.total) pager.appendChild(link(["runs"], Object.assign({}, chosen, { offset: p.offset + p.limit }), " older runs →", { id: "runs-older" }));
      pager.appendChild(el("span", { class: "sub" }, " runs " + (p.total ? p.offset + 1 : 0) + "–" + Math.min(p.total, p.offset + p.limit) + " of " + p.total + (Object.keys(chosen).length ? " that match" : "")));
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
      ["name", r.name], ["tags", tagList(r.tags).join(", ") || null], ["config digest", digest(r)],
      ["dataset", r.dataset], ["adapter", r.adapter], ["status", r.status + (r.judge_failures ? " · " + r.judge_failures : ""), r.status !== "completed" || !!r.judge_failures],
      ["judge errors", r.judge_errors, r.judge_errors > 0], ["started (UTC)", r.started_at.slice(0, 19).replace("T", " ")],
      ["k", r.k], ["source match", r.source_match], ["judge", r.judge_model || "none"], ["judge mode", r.judge_mode],
      ["cases", r.cases], ["case failures", r.case_failures], ["cost", r.cost_usd === null ? "unknown" : "$" + Number(r.cost_usd).toFixed(4)]
    ]));
    head.appendChild(el("p", { class: "actions" },
      link(["runs", r.run_id, "report"], null, "Report", { id: "report-link" }), " · ",
      link(["runs", r.run_id, "cases"], null, "Cases", { id: "cases-link" }), " · ",
      link(["runs", r.run_id, "cases"], { failing: "1" }, "Failing cases", { id: "failing-link" }), " · ",
      link(["label", r.run_id], null, "Label cases", { id: "label-link" }), " · ",
      link(["trends"], { dataset: r.dataset }, "Trend of this dataset", { id: "trend-link" })));
    var m = section("metrics", "Metrics");
    m.appendChild(table("metrics-table",
      ["metric", "mean", "scored", "skipped", "errors", "labels", "corrected mean (PPI)", "PPI 95% CI"],
      data.metrics.map(function (s) {
        var lab = (data.labels || {})[s.metric] || {};
        return el("tr", { "data-metric": s.metric, class: s.nothing_scored ? "unscored" : null }, cell(s.metric), cell(num(s.mean), true), cell(s.scored, true),
          cell(s.skipped, true), cell(s.errored, true), cell(lab.labels === undefined ? "–" : lab.labels, true),
          cell(num(lab.ppi_mean), true), cell(interval(lab.ppi_ci), true));
      }), [0, 1, 1, 1, 1, 1, 1, 1]));
    m.appendChild(el("p", null, unscoredToggle(data.metrics.filter(function (x) { return x.nothing_scored; }).length)));
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
    if (data.trials) trialsSection(data.trials, data.metrics.map(function (s) { return s.metric; }));
    var c = section("compare-with", "Compare with another run");
    var others = data.others || [];
    if (!others.length) { c.appendChild(el("p", { class: "sub" }, "No other run of this dataset.")); return; }
    var pick = el("select", { id: "compare-base", "aria-label": "baseline run" });
    others.forEach(function (o) { pick.appendChild(el("option", { value: o }, o)); });
    var go = el("button", { id: "compare-go", type: "button" }, "Compare (this run as B)");
    go.addEventListener("click", function () { window.location.href = href(["compare"], { a: pick.value, b: r.run_id }); });
    c.appendChild(el("p", null, "Baseline A: ", pick, " ", go));
  }

  // A run with repeats (CONTRACT section 27): each case's trials as a strip, flaky first.
  function trialsSection(t, order) {
    var s = section("trials", "Trials per case (" + t.repeats + " a case; " + t.flaky_total + " flaky)");
    s.appendChild(el("p", { class: "sub" }, "One mark a trial, darker the higher its score; a case is flaky when a metric's trials lie 0.5 or more apart. " +
      (t.cases_total > t.cases.length ? "The first " + t.cases.length + " of " + t.cases_total + " cases, flaky first (" +
        (t.cases_total - t.cases.length) + " more not shown)" : "Flaky cases first") +
      "; every case: SELECT * FROM repeats WHERE run_id = '" + data.run.run_id + "'"));
    var names = order.filter(function (n) { return t.cases.some(function (c) { return c.metrics[n]; }); });
    s.appendChild(table("trials-table", ["case"].concat(names.map(function (n) { return n.split(".")[1] || n; })),
      t.cases.map(function (c) {
        return el("tr", { "data-case": c.id, class: c.flaky ? "flaky" : null },
          el("td", { class: "mono" }, link(["runs", data.run.run_id, "cases"], { q: c.id }, c.id), c.flaky ? " (flaky)" : null),
          names.map(function (n) {
            var m = c.metrics[n];
            return el("td", null, m ? el("span", { class: "strip" + (m.flaky ? " flaky" : "") }, m.trials.map(function (v, i) {
              return el("span", { class: "trial", title: "trial " + (i + 1) + ": " + (v === null ? "not scored" : num(v)),
                style: v === null ? null : "opacity:" + (0.15 + 0.85 * Math.max(0, Math.min(1, v))).toFixed(2) });
            })) : null);
          }));
      }), names.map(function () { return 0; }).concat([0])));
  }

  // --- trends --------------------------------------------------------------------------
  // One line per series (adapter and config digest), over the runs' start times; a run
  // that did not complete is a hollow mark beside its line, never joined to it. Up to
  // this many points a chart draws each as its own element with a hover title; beyond,
  // each layer (lines, intervals, dots) is one path per series, so 1,000 runs stay a
  // few elements.
  var POINT_ELEMENTS = 200;
  var SERIES_COLOURS = ["#2f5bd3", "#c2410c", "#15803d", "#7e22ce", "#b45309", "#0e7490", "#be185d", "#4d7c0f"];
  function seriesColour(i) { return SERIES_COLOURS[i % SERIES_COLOURS.length]; }
  var HOUR = 3600000, DAY = 24 * HOUR;
  // Up to five dated ticks over the runs' span, as precise as the span needs (UTC), none
  // repeating its neighbour's label.
  function dateTicks(t0, t1) {
    var span = t1 - t0, out = [];
    var unit = span < 2 * HOUR ? "second" : span < 3 * DAY ? "minute" : "day";
    // Seconds take room: three of them fit under a chart.
    var n = span <= 0 ? 1 : unit === "second" ? 3 : 5;
    for (var i = 0; i < n; i++) {
      var t = n === 1 ? t0 : t0 + i * span / (n - 1), label = fmtTime(t, unit);
      if (!out.length || out[out.length - 1].label !== label) out.push({ t: t, label: label });
    }
    return out;
  }
  function fmtTime(t, unit) {
    var d = new Date(t).toISOString();
    if (unit === "second") return d.slice(5, 10) + " " + d.slice(11, 19);
    return unit === "minute" ? d.slice(5, 10) + " " + d.slice(11, 16) : d.slice(0, 10);
  }
  function chart(metric, runs) {
    var W = 560, H = 190, L = 44, R = 14, T = 10, B = 34;
    var times = runs.map(function (r) { return Date.parse(r.started_at); });
    var t0 = Math.min.apply(null, times), t1 = Math.max.apply(null, times);
    function x(i) { return t1 === t0 ? L + (W - L - R) / 2 : L + (times[i] - t0) * (W - L - R) / (t1 - t0); }
    var lo = 0, hi = 1;
    if (!metric.bounded) {
      var values = [];
      metric.points.forEach(function (p) { values.push(p.mean); if (p.ci) values.push(p.ci[0], p.ci[1]); });
      lo = Math.min.apply(null, values.concat([0])); hi = Math.max.apply(null, values.concat([lo + 1e-9]));
    }
    function y(v) { return T + (1 - (v - lo) / (hi - lo)) * (H - T - B); }
    function xy(i, v) { return x(i).toFixed(1) + "," + y(v).toFixed(1); }
    var g = svg("svg", { width: W, height: H, viewBox: "0 0 " + W + " " + H, class: "trend", role: "img" });
    [lo, (lo + hi) / 2, hi].forEach(function (v) {
      g.appendChild(svg("line", { x1: L, x2: W - R, y1: y(v), y2: y(v), class: "grid" }));
      g.appendChild(svg("text", { x: L - 6, y: y(v) + 4, "text-anchor": "end", class: "axis" }, String(Number(v.toPrecision(3)))));
    });
    var axis = svg("g", { class: "x-axis" });
    dateTicks(t0, t1).forEach(function (tick, i, all) {
      var tx = t1 === t0 ? L + (W - L - R) / 2 : L + (tick.t - t0) * (W - L - R) / (t1 - t0);
      axis.appendChild(svg("line", { x1: tx, x2: tx, y1: H - B, y2: H - B + 4, class: "grid" }));
      axis.appendChild(svg("text", { x: tx, y: H - B + 16, "text-anchor": all.length === 1 ? "middle" : i === 0 ? "start" : i === all.length - 1 ? "end" : "middle", class: "axis date" }, tick.label));
    });
    g.appendChild(axis);
    var bySeries = {};
    metric.points.forEach(function (p) { (bySeries[runs[p.run].series] = bySeries[runs[p.run].series] || []).push(p); });
    var many = metric.points.length > POINT_ELEMENTS;
    Object.keys(bySeries).forEach(function (k) {
      var pts = bySeries[k], colour = seriesColour(Number(k));
      var joined = pts.filter(function (p) { return !runs[p.run].aborted; });
      var path = joined.map(function (p, i) { return (i ? "L" : "M") + xy(p.run, p.mean); }).join(" ");
      g.appendChild(svg("path", { d: path || "M0,0", class: "line series-line", "data-series": k, stroke: colour },
        svg("title", null, data.series[k].label)));
      if (many) {
        var cis = pts.filter(function (p) { return p.ci; }).map(function (p) { return "M" + xy(p.run, p.ci[1]) + " L" + xy(p.run, p.ci[0]); });
        if (cis.length) g.appendChild(svg("path", { d: cis.join(" "), class: "ci", stroke: colour }));
        g.appendChild(svg("path", { d: joined.map(function (p) { return "M" + xy(p.run, p.mean) + " h0.01"; }).join(" "), class: "dots", stroke: colour }));
        var stopped = pts.filter(function (p) { return runs[p.run].aborted; });
        if (stopped.length) g.appendChild(svg("path", { d: stopped.map(function (p) { return "M" + xy(p.run, p.mean) + " h0.01"; }).join(" "), class: "dots aborted", stroke: colour }));
        return;
      }
      pts.forEach(function (p) {
        var r = runs[p.run];
        var grp = svg("g", { class: "point" + (r.aborted ? " aborted" : ""), "data-run": r.run_id, "data-series": k });
        if (p.ci) grp.appendChild(svg("line", { x1: x(p.run), x2: x(p.run), y1: y(p.ci[1]), y2: y(p.ci[0]), class: "ci", stroke: colour }));
        var title = svg("title", null, r.run_id + ": " + num(p.mean) + " " + interval(p.ci) + ", n = " + p.n + (r.aborted ? " (" + r.status + ", not joined)" : ""));
        grp.appendChild(r.aborted ? svg("rect", { x: x(p.run) - 3.5, y: y(p.mean) - 3.5, width: 7, height: 7, class: "aborted-mark", stroke: colour }, title)
          : svg("circle", { cx: x(p.run), cy: y(p.mean), r: 3, fill: colour }, title));
        g.appendChild(grp);
      });
    });
    return g;
  }
  function legend() {
    return el("ul", { class: "legend", id: "trend-legend" }, data.series.map(function (sr, i) {
      return el("li", { "data-series": String(i) }, el("span", { class: "key", style: "background:" + seriesColour(i) }),
        el("span", { class: "label" }, sr.label), el("span", { class: "sub" }, " " + shortAdapter(sr.adapter) + ", " + sr.runs + " run" + (sr.runs === 1 ? "" : "s")));
    }));
  }
  function trendsPage() {
    nav();
    var head = section("trends-head", null);
    head.appendChild(el("h1", null, "Trends: ", el("span", { id: "trend-dataset" }, data.dataset)));
    var pick = el("select", { id: "trend-pick", "aria-label": "dataset" });
    data.datasets.forEach(function (d) { pick.appendChild(el("option", { value: d }, d)); });
    pick.value = data.dataset;
    pick.addEventListener("change", function () { window.location.href = href(["trends"], { dataset: pick.value }); });
    head.appendChild(el("p", null, "Dataset ", pick, el("span", { class: "sub" }, " " + data.runs.length + " runs over their start times (UTC). One line per adapter and config digest; " +
      "a run that did not complete is a hollow square, not joined. Interval: " + data.interval + ". Metrics no run scored are not plotted.")));
    head.appendChild(legend());
    // A page of the dataset's newest runs; older ones a page further.
    var w = data.window || { offset: 0, limit: data.runs.length, total: data.runs.length };
    if (w.total > data.runs.length) {
      var pager = el("p", { class: "sub pager", id: "trend-pager" }, "Runs " + (w.total - w.offset - data.runs.length + 1) + " to " + (w.total - w.offset) + " of " + w.total + ". ");
      if (w.offset + w.limit < w.total) pager.appendChild(link(["trends"], { dataset: data.dataset, offset: w.offset + w.limit }, "← older runs", { id: "trend-older" }));
      if (w.offset > 0) pager.appendChild(link(["trends"], { dataset: data.dataset, offset: Math.max(0, w.offset - w.limit) }, "newer runs →", { id: "trend-newer" }));
      head.appendChild(pager);
    }
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
    head.appendChild(facts([["A (baseline)", data.a.run_id], ["B", data.b.run_id], ["name A", data.a.name], ["name B", data.b.name],
      ["dataset A", data.a.dataset], ["dataset B", data.b.dataset],
      ["judge A", data.a.judge_model || "none"], ["judge B", data.b.judge_model || "none"],
      ["config A", digest(data.a)], ["config B", digest(data.b)]]));
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
        var unscored = !m.scored_a && !m.scored_b ? " unscored" : "";
        return el("tr", { "data-metric": name, class: "verdict-" + String(m.verdict).replace(/[^a-z]+/g, "-") + unscored }, cell(name), cell(m.paired, true),
          cell(num(m.mean_a), true), cell(num(m.mean_b), true), cell(signed(m.delta), true),
          cell(m.ci_low === null ? "–" : "[" + num(m.ci_low) + ", " + num(m.ci_high) + "]", true),
          cell(num(m.p_value), true), cell(num(m.p_adjusted), true), cell(num(m.mde), true), cell(m.verdict));
      }), [0, 1, 1, 1, 1, 1, 1, 1, 1, 0]));
    s.appendChild(el("p", null, unscoredToggle(names.filter(function (n) { return !cmp.metrics[n].scored_a && !cmp.metrics[n].scored_b; }).length)));
    if (cmp.regressions.length) {
      var g = section("regressions", "Cases that got worse");
      g.appendChild(table("regressions-table", ["metric", "case", "A", "B", "B − A"], cmp.regressions.map(function (x) {
        return el("tr", null, cell(x.metric), cell(x.case_id), cell(num(x.value_a), true), cell(num(x.value_b), true), cell(signed(x.delta), true));
      }), [0, 0, 1, 1, 1]));
    }
  }

  // --- a run's cases: a table of cases by metrics -----------------------------------------
  // A scored value's colour: five steps from worst (v0) to best (v4) in the metric's own
  // direction; a metric without bounds (a count, seconds) is not coloured.
  function shade(col, v) {
    if (!col.bounded) return "unbounded";
    var g = col.higher_is_better ? v : 1 - v;
    return "v" + Math.max(0, Math.min(4, Math.floor(g * 5)));
  }
  function breaksFloor(floor, v) {
    return !!floor && ((floor.min !== null && floor.min !== undefined && v < floor.min - 1e-9) ||
      (floor.max !== null && floor.max !== undefined && v > floor.max + 1e-9));
  }
  function floorText(floor) {
    var parts = [];
    if (floor.min !== null && floor.min !== undefined) parts.push(">= " + floor.min);
    if (floor.max !== null && floor.max !== undefined) parts.push("<= " + floor.max);
    return "floor " + parts.join(" and ");
  }
  function valueText(col, v) { return col.bounded ? num(v, 2) : String(Number(Number(v).toPrecision(4))); }
  var STATUS_TEXT = { skipped: "–", not_applicable: "n/a", judge_error: "judge err", error: "error" };
  // One result as a cell: a scored value coloured, the other statuses apart.
  function resultCell(col, r) {
    var hide = col.unscored ? " unscored" : "";
    if (!r) return el("td", { class: "res none" + hide, "data-metric": col.metric });
    var status = r[0], v = r[1];
    if (status === "scored") {
      var broken = breaksFloor(col.floor, v);
      return el("td", { class: "res num " + shade(col, v) + (broken ? " below-floor" : "") + hide, "data-metric": col.metric,
        title: col.metric + ": " + v + (broken ? " (breaks its " + floorText(col.floor) + ")" : "") }, valueText(col, v));
    }
    var kind = status === "error" || status === "judge_error" ? " st err" : " st";
    return el("td", { class: "res" + kind + " " + status + hide, "data-metric": col.metric, title: col.metric + ": " + status.replace("_", " ") },
      STATUS_TEXT[status] || status);
  }
  function failing(c, columns) {
    return columns.some(function (col) {
      var r = c.results[col.metric];
      return r && (r[0] === "error" || r[0] === "judge_error" || (r[0] === "scored" && breaksFloor(col.floor, r[1])));
    });
  }
  function casesPage() {
    nav();
    var q = data.query;
    var run = data.run;
    var head = section("cases-head", null);
    head.appendChild(el("h1", null, "Cases of ", link(["runs", data.run_id], null, run.name ? run.name + " (" + data.run_id + ")" : data.run_id)));
    var form = el("form", { method: "get", id: "case-form", class: "filters" });
    form.setAttribute("action", href(["runs", data.run_id, "cases"]));
    var text = el("input", { type: "search", name: "q", id: "case-q", placeholder: "text in id, question or answer", "aria-label": "search text" });
    text.value = q.text;
    var metric = el("select", { name: "metric", id: "case-metric", "aria-label": "metric" }, el("option", { value: "" }, "any metric"));
    data.metrics.forEach(function (m) { metric.appendChild(el("option", { value: m }, m)); });
    metric.value = q.metric;
    var status = el("select", { name: "status", id: "case-status", "aria-label": "status" }, el("option", { value: "" }, "any status"));
    data.statuses.forEach(function (x) { status.appendChild(el("option", { value: x }, x)); });
    status.value = q.status;
    var fail = el("input", { type: "checkbox", name: "failing", value: "1", id: "case-failing" });
    fail.checked = q.failing;
    form.appendChild(el("label", null, "Search ", text));
    form.appendChild(el("label", null, "metric ", metric));
    form.appendChild(el("label", null, "status ", status));
    form.appendChild(el("label", { title: "an error, a judge error, or a value past one of the run's floors" }, fail, " failing only"));
    // The sort stays as it is when the filters change.
    if (q.sort) form.appendChild(el("input", { type: "hidden", name: "sort", value: q.sort }));
    if (q.sort && q.order !== "asc") form.appendChild(el("input", { type: "hidden", name: "order", value: q.order }));
    form.appendChild(el("button", { type: "submit", id: "case-go" }, "Find"));
    head.appendChild(form);
    var to = Math.min(q.offset + data.cases.length, data.total);
    head.appendChild(el("p", { id: "case-total", class: "sub" }, data.total ? (q.offset + 1) + "–" + to + " of " + data.total + " matching cases" : "0 matching cases"));
    var floors = data.columns.filter(function (c) { return c.floor; });
    head.appendChild(el("p", { class: "sub legend" }, "Each score is coloured from worst ", el("span", { class: "swatch v0" }, "red"),
      " to best ", el("span", { class: "swatch v4" }, "green"), " in its metric's direction; ", el("span", { class: "swatch below-floor" }, "outlined"),
      floors.length ? " = past one of the run's floors (" + floors.map(function (c) { return c.metric + " " + floorText(c.floor); }).join("; ") + ")" : " = past a floor (this run has none)",
      "; – skipped, n/a not applicable. Click a column to sort, a case to open it."));
    var columns = data.columns.filter(function (c) { return !q.metric || c.metric === q.metric; });
    function sortLink(key, label, attrs) {
      var on = q.sort === key;
      var order = on && q.order === "asc" ? "desc" : "asc";
      var arrow = on ? (q.order === "asc" ? " ▲" : " ▼") : "";
      return link(["runs", data.run_id, "cases"], { q: q.text, metric: q.metric, status: q.status, failing: q.failing ? "1" : "", sort: key, order: order },
        [label, arrow], attrs);
    }
    var s = section("case-results", null);
    var t = el("table", { id: "case-table" });
    t.appendChild(el("thead", null, el("tr", null,
      el("th", { class: "case-col", "data-sort": "case" }, sortLink("case", "case")),
      el("th", { "data-sort": "kind" }, sortLink("kind", "kind")),
      el("th", { class: "text-col" }, "question / answer"),
      columns.map(function (c) {
        var short = c.metric.indexOf(".") >= 0 ? c.metric.slice(c.metric.indexOf(".") + 1) : c.metric;
        return el("th", { class: "metric-col" + (c.unscored ? " unscored" : ""), "data-sort": c.metric,
          title: c.metric + (c.higher_is_better ? " (higher is better)" : " (lower is better)") + (c.floor ? ", " + floorText(c.floor) : "") },
          sortLink(c.metric, short + (c.higher_is_better ? "" : " ↓"), { class: "vertical" }));
      }))));
    var body = el("tbody");
    data.cases.forEach(function (c) {
      body.appendChild(el("tr", { class: "case-row" + (failing(c, columns) ? " failing" : ""), "data-case": c.id },
        el("td", { class: "mono case-id" }, link(["runs", data.run_id, "case"], { id: c.id }, c.id, { class: "case-link" })),
        cell(c.kind),
        el("td", { class: "text" }, el("div", { class: "question" }, clipped(c.question)), el("div", { class: "answer" }, clipped(c.answer))),
        columns.map(function (col) { return resultCell(col, c.results[col.metric]); })));
    });
    t.appendChild(body);
    s.appendChild(t);
    var unscored = columns.filter(function (c) { return c.unscored; }).length;
    if (unscored) s.appendChild(el("p", null, unscoredToggle(unscored)));
    var pager = el("p", { class: "pager" });
    var keep = { q: q.text, metric: q.metric, status: q.status, failing: q.failing ? "1" : "", sort: q.sort, order: q.sort ? q.order : "" };
    if (q.offset > 0) pager.appendChild(link(["runs", data.run_id, "cases"], Object.assign({}, keep, { offset: Math.max(0, q.offset - q.limit) }), "← previous", { id: "case-prev" }));
    if (to < data.total) pager.appendChild(link(["runs", data.run_id, "cases"], Object.assign({}, keep, { offset: q.offset + q.limit }), " next →", { id: "case-next" }));
    s.appendChild(pager);
  }

  // --- one case: what `ragproof show RUN --case CASE` prints ------------------------------
  function textBlock(id, c) { return el("pre", { id: id, class: "text-block" }, c ? clipped(c) : el("span", { class: "sub" }, "(none)")); }
  // The answer with an injection's marker highlighted where it is written literally.
  function answerBlock(c) {
    if (!c.answer) return el("pre", { id: "case-answer", class: "text-block" }, el("span", { class: "sub" }, c.error ? "no answer (case failure)" : "no answer"));
    var t = c.answer.t, span = c.marker_span;
    if (!span) return textBlock("case-answer", c.answer);
    return el("pre", { id: "case-answer", class: "text-block" }, t.slice(0, span[0]), el("mark", { class: "sentinel", title: "the injection's marker: the pipeline obeyed" }, t.slice(span[0], span[1])), t.slice(span[1]),
      c.answer.cut ? el("span", { class: "sub" }, " … (" + c.answer.cut + " more characters)") : null);
  }
  function casePage() {
    nav();
    var c = data.case;
    var head = section("case-head", null);
    head.appendChild(el("h1", null, "Case ", el("span", { class: "mono", id: "case-id" }, c.id)));
    head.appendChild(el("p", { class: "sub" }, "of run ", link(["runs", data.run_id], null, data.run_name ? data.run_name + " (" + data.run_id + ")" : data.run_id),
      " · ", link(["runs", data.run_id, "cases"], null, "all cases", { id: "back-to-cases" })));
    head.appendChild(facts([["kind", c.kind], ["dataset", data.dataset], ["latency", c.latency_s === null ? null : c.latency_s + " s"],
      ["error", c.error, !!c.error], ["injection marker", c.marker], ["turn", c.turn ? c.turn.turn + " of " + c.turn.turns + " (" + c.turn.conversation + ")" : null]]));
    var q = section("case-question", "Question");
    q.appendChild(textBlock("case-question-text", c.question));
    if (c.expected_answer) { q.appendChild(el("h3", null, "Expected answer")); q.appendChild(textBlock("case-expected", c.expected_answer)); }
    if (c.expected_sources.length) q.appendChild(el("p", null, "Expected sources: ", el("span", { class: "mono" }, c.expected_sources.join(", "))));
    var a = section("case-output", "What the pipeline said");
    a.appendChild(answerBlock(c));
    a.appendChild(el("h3", null, "Citations"));
    a.appendChild(el("p", { id: "case-citations" }, c.citations.length ? c.citations.map(function (x) {
      return el("span", { class: "badge " + (x.valid ? "good" : "bad"), title: x.valid ? "in the context" : "not in the context" }, x.id);
    }).reduce(function (acc, n) { acc.push(n, " "); return acc; }, []) : el("span", { class: "sub" }, "none")));
    a.appendChild(el("h3", null, "Retrieved" + (c.chunk_source ? " (" + c.chunk_source + ", " + c.chunks_total + ")" : "")));
    if (!c.chunk_source) a.appendChild(el("p", { class: "sub" }, "Not exposed by the pipeline."));
    else a.appendChild(table("case-chunks", ["rank", "id", "score", "expected", "cited", "text"], c.chunks.map(function (ch) {
      return el("tr", { class: ch.expected ? "chunk-expected" : null, "data-chunk": ch.id }, cell(ch.rank, true), el("td", { class: "mono" }, ch.id),
        cell(ch.score === null ? "–" : num(ch.score, 3), true), cell(ch.expected ? "yes" : ""), cell(ch.cited ? "yes" : ""), el("td", { class: "text" }, clipped(ch.text)));
    }), [1, 0, 1, 0, 0, 0]));
    if (c.trajectory) {
      a.appendChild(el("h3", null, "Steps"));
      a.appendChild(table("case-steps", ["#", "step", "query / call", "result"], c.trajectory.steps.map(function (st) {
        if (st.type === "retrieve") {
          return el("tr", null, cell(st.n, true), cell("retrieve, hop " + st.hop), el("td", { class: "text" }, clipped(st.query)),
            el("td", { class: "mono" }, st.chunks.map(function (ch) { return ch.id + (ch.gold ? " (gold)" : ""); }).join(", ") || "nothing"));
        }
        return el("tr", null, cell(st.n, true), cell("tool " + st.name), el("td", { class: "text mono" }, clipped(st.arguments)),
          el("td", { class: "text" }, st.output ? clipped(st.output) : "", st.matches_expected ? el("div", { class: "dir" }, "expected call " + st.matches_expected) : null));
      })));
    }
    var m = section("case-metrics", "Metrics");
    m.appendChild(table("case-results", ["metric", "status", "value", "reason"], c.results.map(function (r) {
      var col = { metric: r.metric, higher_is_better: data.directions[r.metric] !== false, bounded: !!data.bounded[r.metric], floor: data.floors[r.metric] || null };
      return el("tr", { "data-metric": r.metric, class: r.status === "scored" ? null : "st-" + r.status }, cell(r.metric), cell(r.status.replace("_", " ")),
        r.status === "scored" ? resultCell(col, ["scored", r.value]) : cell("–", true), el("td", { class: "text" }, r.reason || ""));
    }), [0, 0, 1, 0]));
    var judged = c.results.filter(function (r) { return r.judge; });
    if (judged.length) {
      var j = section("case-judge", "The judge's replies");
      judged.forEach(function (r) {
        j.appendChild(el("h3", null, r.metric));
        j.appendChild(el("pre", { class: "text-block judge-reply", "data-metric": r.metric }, clipped(r.judge)));
      });
    }
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

  var PAGES = { runs: runsPage, run: runPage, trends: trendsPage, compare: comparePage, cases: casesPage, case: casePage, label: labelPage, problem: problemPage };
  // A page may leave work for after its first paint; it is drawn once that is done.
  var later = PAGES[data.page]();
  function drawn() { document.body.setAttribute("data-ready", "1"); }
  if (typeof later === "function") {
    requestAnimationFrame(function () { setTimeout(function () { later(); drawn(); }, 0); });
  } else {
    drawn();
  }
})();
