// The ragproof report's only script. It reads the embedded JSON and builds the
// page with DOM calls. Case text (answers, chunks, judge replies) is hostile by
// assumption, so it only ever becomes a text node: this file never assigns
// innerHTML, never builds a link from data and never sets an event attribute.
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("report-data").textContent);
  data.conversations = data.conversations || {};  // reports made before conversations
  var app = document.getElementById("app");
  var STATUS = { s: "scored", k: "skipped", n: "not_applicable", j: "judge_error", e: "error", "-": "none" };
  var KINDS = { q: "qa", u: "unanswerable", i: "injection", p: "poisoning" };
  var PAGE = 200;
  var metricsByName = {};
  data.metrics.forEach(function (m) { metricsByName[m.name] = m; });
  function clipped(c) {
    if (!c) return null;
    return c.cut ? [c.t, el("span", { class: "sub" }, " … (" + c.cut + " more characters in the store)")] : c.t;
  }
  function goodness(metric, v) {
    var m = metricsByName[metric];
    var g = m && m.higher_is_better === false ? 1 - v : v;
    return "v" + Math.min(4, Math.floor(g * 5));
  }
  // How many a set holds: the report lists a bounded part of a large run's failures,
  // obeyed injections and cases (reports made before the bound list them all).
  function totalOf(key, listed) { return typeof data[key] === "number" ? data[key] : listed.length; }
  function direction(m) { return m.higher_is_better ? "higher is better" : "lower is better"; }
  function section(id, title) {
    var s = el("section", { class: "card", id: id }, el("h2", null, title));
    app.appendChild(s);
    return s;
  }

  // --- distribution plot -----------------------------------------------------------------
  function histogram(m, width, height, labelled) {
    var bins = m.histogram, max = Math.max.apply(null, bins.concat([1]));
    var pad = labelled ? 14 : 1, w = (width - 2) / bins.length;
    var root = svg("svg", { class: "hist", width: width, height: height + (labelled ? pad : 0),
      viewBox: "0 0 " + width + " " + (height + (labelled ? pad : 0)), role: "img" },
      svg("title", {}, m.name + ": distribution of " + m.scored + " scored cases over [0, 1]"));
    bins.forEach(function (count, i) {
      var h = count ? Math.max(1.5, (height - 2) * count / max) : 0;
      var low = m.higher_is_better ? i < bins.length / 2 : i >= bins.length / 2;
      var bar = svg("rect", { class: "bar" + (low ? " low" : ""), x: 1 + i * w + 0.5, y: height - h,
        width: Math.max(1, w - 1), height: h });
      bar.appendChild(svg("title", {}, "[" + (i / bins.length).toFixed(1) + ", " + ((i + 1) / bins.length).toFixed(1) +
        (i === bins.length - 1 ? "]" : ")") + ": " + count + " cases"));
      root.appendChild(bar);
      if (labelled && count) root.appendChild(svg("text", { x: 1 + i * w + w / 2, y: height - h - 2, "text-anchor": "middle" }, String(count)));
    });
    root.appendChild(svg("line", { x1: 0, x2: width, y1: height, y2: height, stroke: "#b8c0cc" }));
    if (labelled) {
      ["0", "0.5", "1"].forEach(function (t, i) {
        root.appendChild(svg("text", { x: [4, width / 2, width - 4][i], y: height + 11, "text-anchor": ["start", "middle", "end"][i] }, t));
      });
    }
    return root;
  }

  // --- header ------------------------------------------------------------------------------
  function header() {
    var r = data.run;
    var s = section("run", "");
    s.firstChild.remove();
    add(s, el("h1", null, "ragproof report"));
    add(s, el("div", { class: "sub mono", id: "run-id" }, r.run_id));
    var judge = r.judge_model ? r.judge_model + (r.judge_mode ? " (" + r.judge_mode + ")" : "") : "none (judge metrics skipped)";
    var tags = Object.keys(r.tags || {}).sort().map(function (k) { return k + "=" + r.tags[k]; });
    var facts = [
      ["Name", r.name || "–"], ["Tags", tags.length ? tags.join(", ") : "–"],
      ["Config digest", r.config_digest ? r.config_digest.slice(0, 8) : "–"],
      ["Status", r.status + (r.judge_failures ? " · " + r.judge_failures : ""), r.status !== "completed" || !!r.judge_failures], ["Dataset", r.dataset], ["Adapter", r.adapter],
      ["Cases", r.cases], ["Case failures", r.case_failures, r.case_failures > 0],
      ["Judge model", judge], ["Judge requests", r.judge_requests + " (" + r.judge_repairs + " repairs)"],
      ["Cache hits", r.cache_hits], ["Judge errors", r.judge_errors, r.judge_errors > 0],
      ["Cost", r.cost_usd == null ? "unknown (no price for the judge model)" : "$" + Number(r.cost_usd).toFixed(4)], ["Started", r.started_at], ["Finished", r.finished_at]
    ];
    var agreement = r.judge_agreement || {};
    Object.keys(agreement).forEach(function (metric) {
      var a = agreement[metric];
      facts.push(["Jury agreement " + metric, (a.alpha === null || a.alpha === undefined ? "undefined" : "α " + num(a.alpha, 3)) + " over " + a.cases + " cases"]);
    });
    add(s, el("div", { class: "facts", id: "facts" }, facts.map(function (f) {
      return el("div", { class: "fact" }, el("div", { class: "k" }, f[0]), el("div", { class: "v" + (f[2] ? " bad" : "") }, String(f[1])));
    })));
    var prompts = Object.keys(r.prompt_hashes || {}).sort();
    var more = el("details", null, el("summary", null, "Configuration and judge prompt hashes"));
    if (prompts.length) {
      add(more, el("table", null, el("tr", null, el("th", null, "Prompt"), el("th", null, "sha256")),
        prompts.map(function (p) { return el("tr", null, el("td", null, p), el("td", { class: "mono" }, r.prompt_hashes[p])); })));
    } else add(more, el("p", { class: "empty" }, "No judge prompts: this run had no judge."));
    add(more, el("pre", null, JSON.stringify(r.config, null, 2)));
    add(more, el("p", { class: "sub" }, "Query every case with DuckDB: ", el("code", null, "duckdb -readonly " + data.store)));
    add(s, more);
  }

  // --- diagnosis (CONTRACT section 20): where the run loses most ------------------------
  function diagnosis() {
    var d = data.diagnosis;
    if (!d) return;
    var s = section("diagnosis", "Diagnosis: where the run loses");
    var lead = d.areas[0];
    add(s, el("p", { id: "diagnosis-lead" }, "The run loses most to ", el("strong", null, lead.area),
      ": " + num(lead.loss) + " [" + (lead.loss_ci ? num(lead.loss_ci[0]) + ", " + num(lead.loss_ci[1]) : "–") + "] of " + lead.counts + ".",
      d.clear ? "" : " Not clearly ahead of " + d.areas[1].area + ": their intervals overlap."));
    add(s, el("table", { id: "diagnosis-table" },
      el("tr", null, ["Area", "Lost", "95% CI", "Cases", "Share of", "Read from"].map(function (h, i) { return el("th", { class: i >= 1 && i <= 3 ? "num" : null }, h); })),
      d.areas.map(function (a, i) {
        return el("tr", { class: i === 0 ? "selected" : null, "data-area": a.area },
          el("td", null, a.area), el("td", { class: "num" }, el("strong", null, num(a.loss))),
          el("td", { class: "num" }, a.loss_ci ? "[" + num(a.loss_ci[0]) + ", " + num(a.loss_ci[1]) + "]" : "–"),
          el("td", { class: "num" }, a.scored), el("td", null, a.counts),
          el("td", { class: "mono" }, (a.higher_is_better ? "1 - " : "") + a.metric + " (" + num(a.mean) + ")"));
      })));
    add(s, el("p", { class: "sub" }, "Look at: " + lead.action + ". Each loss is a share of its own claims over the cases its metric scored, with a seeded 95% bootstrap interval."));
  }

  // --- metrics -------------------------------------------------------------------------------
  var selectedMetric = null;
  function metricsTable() {
    var s = section("metrics", "Metrics");
    add(s, el("p", { class: "sub" }, "Mean over scored cases with a seeded 95% bootstrap interval; nearest-rank p50 and p95. " +
      "Click a metric to see its worst cases."));
    var calibrations = data.calibrations || {};
    var head = el("tr", null, ["Metric", "Mean", "95% CI", "Human-corrected (PPI)", "p50", "p95", "Scored", "Skipped", "n/a", "Errored", "Distribution", ""].map(function (h, i) {
      return el("th", { class: i >= 1 && i <= 9 ? "num" : null }, h);
    }));
    function corrected(name) {
      var c = calibrations[name];
      if (!c || c.ppi_mean === null || c.ppi_mean === undefined) return "–";
      return el("div", { class: "ppi", title: c.n_labelled + " human labels of " + c.n_judged + " judged cases" },
        el("strong", null, num(c.ppi_mean)), " (n=" + c.n_labelled + ")",
        el("div", { class: "dir" }, c.ppi_ci ? "[" + num(c.ppi_ci[0]) + ", " + num(c.ppi_ci[1]) + "]" : "interval needs 2+ labelled and unlabelled"),
        c.annotators ? el("div", { class: "dir agreement", title: "Krippendorff's alpha (interval, on the bands): among the annotators, and with the judge as one more" },
          c.annotators + " annotator" + (c.annotators === 1 ? "" : "s") + " · α " + num(c.annotator_alpha) + " · judge α " + num(c.judge_alpha)) : null);
    }
    var body = el("tbody");
    var unscored = 0;
    data.metrics.forEach(function (m) {
      if (m.nothing_scored) unscored++;
      var row = el("tr", { class: "clickable" + (m.nothing_scored ? " unscored" : ""), "data-metric": m.name },
        el("td", null, el("div", null, m.name), el("div", { class: "dir" }, direction(m)),
          m.note ? el("div", { class: "dir note" }, m.note) : null),
        el("td", { class: "num" }, el("strong", null, num(m.mean))),
        el("td", { class: "num" }, m.ci ? "[" + num(m.ci[0]) + ", " + num(m.ci[1]) + "]" : "–"),
        el("td", { class: "num calibrated" }, corrected(m.name)),
        el("td", { class: "num" }, num(m.p50)), el("td", { class: "num" }, num(m.p95)),
        el("td", { class: "num" }, m.scored), el("td", { class: "num" }, m.skipped),
        el("td", { class: "num" }, m.not_applicable),
        el("td", { class: "num" }, m.errored ? el("span", { class: "st err" }, m.errored + (m.judge_errors ? " (" + m.judge_errors + " judge)" : "")) : "0"),
        el("td", null, m.scored ? histogram(m, 120, 28, false) : el("span", { class: "empty" }, "nothing scored")),
        el("td", null, el("button", { type: "button", class: "worst-button" }, "Worst cases")));
      row.addEventListener("click", function () { showWorst(m.name, true); });
      body.appendChild(row);
    });
    add(s, el("table", { id: "metrics-table" }, el("thead", null, head), body));
    add(s, el("p", null, unscoredToggle(unscored)));
  }
  // A metric with nothing scored in this run (and, compared, in the baseline either).
  function unscoredMetric(name) { var m = metricsByName[name]; return m ? m.nothing_scored : false; }

  // --- one case, in full ----------------------------------------------------------------
  function answerNode(d) {
    if (!d.answer) return el("div", { class: "empty" }, d.error ? "no answer (case failure)" : "no answer");
    var t = d.answer.t, span = d.marker_span;
    var node = el("div", { class: "text answer" });
    if (span && span[1] <= t.length) {
      add(node, [t.slice(0, span[0]), el("mark", { class: "sentinel" }, t.slice(span[0], span[1])), t.slice(span[1])]);
    } else add(node, t);
    if (d.answer.cut) add(node, el("span", { class: "sub" }, " … (" + d.answer.cut + " more characters in the store)"));
    return node;
  }
  function statusCell(status, value, metric) {
    if (status === "scored") return el("span", { class: "badge " + (goodness(metric, value) >= "v3" ? "good" : goodness(metric, value) <= "v1" ? "bad" : "warn") }, num(value));
    return el("span", { class: "st" + (status === "error" || status === "judge_error" ? " err" : "") }, status.replace("_", " "));
  }
  function caseCard(d, focusMetric, open, inThread) {
    var focus = null;
    d.results.forEach(function (r) { if (r.metric === focusMetric) focus = r; });
    var summary = el("summary", null, el("strong", { class: "mono" }, d.id), el("span", { class: "badge" }, d.kind),
      focus ? statusCell(focus.status, focus.value, focus.metric) : null,
      d.error ? el("span", { class: "badge bad" }, "case failure") : null,
      d.turn ? el("span", { class: "badge turn" }, "turn " + d.turn.turn + " of " + d.turn.turns) : null,
      el("span", { class: "sub" }, (d.question && d.question.t || "").slice(0, 110)));
    var body = el("div", { class: "body" });
    if (d.turn && data.conversations[d.turn.conversation] && !inThread) add(body, threadButton(d.turn.conversation));
    add(body, [el("div", { class: "label" }, "Question"), el("div", { class: "text" }, clipped(d.question))]);
    if (d.expected_answer) add(body, [el("div", { class: "label" }, "Expected answer"), el("div", { class: "text" }, clipped(d.expected_answer))]);
    if (d.error) add(body, [el("div", { class: "label" }, "Case failure"), el("pre", { class: "error" }, d.error)]);
    add(body, [el("div", { class: "label" }, "Answer"), answerNode(d)]);
    if (d.marker) {
      add(body, el("div", { class: "sub" }, d.kind === "poisoning" ? "Poison marker: " : "Injection marker: ", el("code", null, d.marker),
        d.marker_span ? " (highlighted above: the pipeline printed it)" : ""));
    }
    if (d.citations.length) {
      add(body, [el("div", { class: "label" }, "Citations"), el("div", null, d.citations.map(function (c) {
        return el("span", { class: "badge " + (c.valid ? "good" : "bad"), title: c.valid ? "cites a retrieved chunk" : "not among the retrieved chunks" },
          (c.valid ? "✓ " : "✗ ") + c.id + (c.valid ? " valid" : " invalid"));
      }).reduce(function (acc, n) { acc.push(n, " "); return acc; }, []))]);
    }
    add(body, el("div", { class: "label" }, "Retrieved chunks" + (d.chunk_source ? " (" + d.chunk_source + ")" : "")));
    if (d.chunks.length) {
      var judged = {};
      d.results.forEach(function (r) {
        if (r.metric === "retrieval.context_relevance" && r.verdicts) {
          r.verdicts.forEach(function (v) { if (v.relevance !== undefined && !(v.chunk_id in judged)) judged[v.chunk_id] = v.relevance; });
        }
      });
      var t = el("table", { class: "chunks" }, el("tr", null, ["Rank", "Chunk", "Expected", "Cited", "Judged relevance", "Text"].map(function (h) { return el("th", null, h); })));
      d.chunks.forEach(function (c) {
        var rel = judged[c.id];
        add(t, el("tr", { class: c.expected ? "chunk-expected" : null },
          el("td", { class: "num" }, "#" + c.rank), el("td", { class: "mono" }, c.id, c.doc ? el("div", { class: "sub" }, "doc " + c.doc) : null),
          el("td", null, c.expected ? el("span", { class: "ok" }, "★ expected") : ""),
          el("td", null, c.cited ? "cited" : ""),
          el("td", null, rel === undefined ? "" : el("span", { class: rel === "irrelevant" ? "no" : "ok" }, rel)),
          el("td", { class: "text" }, clipped(c.text))));
      });
      add(body, t);
      if (d.chunks_total > d.chunks.length) add(body, el("div", { class: "sub" }, (d.chunks_total - d.chunks.length) + " more chunks in the store"));
    } else add(body, el("div", { class: "empty" }, d.chunk_source ? "retrieved nothing" : "not exposed by the adapter"));
    if (d.expected_sources.length) add(body, el("div", { class: "sub" }, "Expected sources: " + d.expected_sources.join(", ")));
    if (d.trajectory) {
      // The agent's steps (CONTRACT section 17): each hop's chunks with its gold ones
      // starred, and which expected tool call each made call matched.
      var tr = d.trajectory;
      add(body, el("div", { class: "label" }, "Trajectory (" + tr.steps.length + " steps)"));
      var st = el("table", { class: "chunks trajectory" }, el("tr", null, ["Step", "Kind", "Query / call", "Result"].map(function (h) { return el("th", null, h); })));
      tr.steps.forEach(function (s) {
        if (s.type === "retrieve") {
          var found = el("div", null, s.chunks.map(function (c) {
            return el("div", { class: c.gold ? "chunk-expected" : null }, el("span", { class: "mono" }, c.id), c.gold ? el("span", { class: "ok" }, " ★ gold") : "");
          }));
          if (s.chunks_total > s.chunks.length) add(found, el("div", { class: "sub" }, (s.chunks_total - s.chunks.length) + " more chunks"));
          if (s.gold.length) add(found, el("div", { class: "sub" }, "hop " + s.hop + " gold: " + s.gold.join(", ")));
          add(st, el("tr", null, el("td", { class: "num" }, "#" + s.n), el("td", null, "retrieve (hop " + s.hop + ")"), el("td", { class: "text" }, clipped(s.query)), el("td", null, found)));
        } else {
          add(st, el("tr", null, el("td", { class: "num" }, "#" + s.n), el("td", null, "tool"),
            el("td", { class: "mono" }, s.name + " ", clipped(s.arguments)),
            el("td", null, s.matches_expected ? el("span", { class: "ok" }, "✓ expected call " + s.matches_expected) : el("span", { class: "no" }, "extra call"),
              s.output ? el("div", { class: "text" }, clipped(s.output)) : null)));
        }
      });
      add(body, st);
      if (tr.expected_tools.length) {
        add(body, el("div", { class: "sub" }, "Expected calls (" + tr.tool_match + "): ", tr.expected_tools.map(function (e, i) {
          return el("span", { class: "badge " + (e.matched_step ? "good" : "bad") }, (i + 1) + ". " + e.name + (e.arguments ? " " + e.arguments : "") + (e.matched_step ? " → step #" + e.matched_step : " unmatched"));
        }).reduce(function (acc, n) { acc.push(n, " "); return acc; }, [])));
      }
      if (tr.missing_hops.length) add(body, el("div", { class: "sub no" }, "Missing hops (no retrieve step): " + tr.missing_hops.join(", ")));
    }
    if (d.claims) add(body, claimsNode(d.claims));
    add(body, el("div", { class: "label" }, "Metrics"));
    add(body, resultsTable(d.results, focusMetric));
    return el("details", { class: "case", "data-case": d.id, open: open ? "" : null }, summary, body);
  }
  // Each claim of the answer and of the reference (claim_check) with the chunks that support it.
  var CLAIM_GOOD = { grounded: true, used: true };
  var CLAIM_BAD = { hallucination: true, ignored: true, missed: true };
  function claimsNode(c) {
    var t = el("table", { class: "chunks claims-table" }, el("tr", null, ["Of", "Claim", "What it is", "Supported by"].map(function (h) { return el("th", null, h); })));
    [["response", "answer"], ["reference", "reference"]].forEach(function (side) {
      c[side[0]].forEach(function (x) {
        add(t, el("tr", { "data-kind": x.kind },
          el("td", null, side[1]), el("td", { class: "text" }, x.claim),
          el("td", null, el("span", { class: "badge " + (CLAIM_GOOD[x.kind] ? "good" : CLAIM_BAD[x.kind] ? "bad" : "warn") }, x.kind)),
          el("td", null, x.chunks.length ? x.chunks.map(function (id) { return el("code", { class: "claim-chunk" }, id); }).reduce(function (acc, n) { acc.push(n, " "); return acc; }, []) : el("span", { class: "empty" }, "no chunk"),
            x.ignored.length ? el("div", { class: "sub" }, "not in the context, ignored: " + x.ignored.join(", ")) : null)));
      });
    });
    return [el("div", { class: "label" }, "Claims (claim_check: the answer's and the reference's, with the chunks that support them)"), t];
  }
  function resultsTable(results, focusMetric) {
    var rt = el("table", { class: "results" }, el("tr", null, ["Metric", "Result", "Reason / judge"].map(function (h) { return el("th", null, h); })));
    results.forEach(function (r) {
      var extra = el("div");
      if (r.reason) add(extra, el("div", { class: "text" }, r.reason));
      if (r.claims && r.claims.length) {
        add(extra, el("ul", { class: "claims" }, r.claims.map(function (c) {
          return el("li", null, el("span", { class: c.supported ? "ok" : "no" }, c.supported ? "✓ supported" : "✗ unsupported"), " ", c.claim);
        })));
      }
      if (r.verdicts && r.verdicts.length) {
        add(extra, el("ul", { class: "claims" }, r.verdicts.map(function (v) {
          if (v.relevance !== undefined) {
            return el("li", null, el("span", { class: v.relevance === "irrelevant" ? "no" : "ok" }, v.relevance), " ", el("code", null, v.chunk_id));
          }
          return el("li", null, el("span", { class: v.supported ? "ok" : "no" }, v.supported ? "✓ supports" : "✗ does not support"), " ", el("code", null, v.chunk_id));
        })));
      }
      if (r.retained && r.retained.length) {
        add(extra, el("ul", { class: "claims" }, r.retained.map(function (v) {
          return el("li", null, el("span", { class: v.retained ? "ok" : "no" }, v.retained ? "✓ retained" : "✗ not retained"), " turn " + v.turn);
        })));
      }
      if (r.judge) add(extra, el("details", null, el("summary", { class: "sub" }, "judge raw reply"), el("pre", null, clipped(r.judge))));
      add(rt, el("tr", { class: r.metric === focusMetric ? "selected" : null }, el("td", null, r.metric), el("td", null, statusCell(r.status, r.value, r.metric)), el("td", null, extra)));
    });
    return rt;
  }

  // --- worst cases -------------------------------------------------------------------------
  var worstSection;
  function worst() {
    worstSection = section("worst", "Worst cases");
    var pick = el("select", { id: "worst-metric" }, data.metrics.map(function (m) { return el("option", { value: m.name }, m.name); }));
    pick.addEventListener("change", function () { showWorst(pick.value, false); });
    add(worstSection, el("div", { class: "filters" }, el("label", null, "Metric ", pick)));
    add(worstSection, el("div", { id: "worst-body" }));
    var first = null;
    data.metrics.forEach(function (m) { if (!first && m.worst.length) first = m.name; });
    if (first) showWorst(first, false);
  }
  function showWorst(name, scroll) {
    var m = metricsByName[name];
    selectedMetric = name;
    document.getElementById("worst-metric").value = name;
    document.querySelectorAll("#metrics-table tr[data-metric]").forEach(function (tr) {
      tr.classList.toggle("selected", tr.getAttribute("data-metric") === name);
    });
    var body = document.getElementById("worst-body");
    body.replaceChildren();
    add(body, el("h3", { id: "worst-title" }, "Worst cases: " + name + " (" + direction(m) + ")"));
    if (m.scored) add(body, el("div", null, histogram(m, 360, 70, true)));
    if (!m.worst.length) {
      add(body, el("p", { class: "empty" }, "No case scored on this metric."));
    } else {
      add(body, el("p", { class: "sub" }, "The " + m.worst.length + " worst of " + m.scored + " scored cases, worst first."));
      m.worst.forEach(function (id, i) {
        if (data.details[id]) add(body, caseCard(data.details[id], name, i === 0));
        else if (data.conversations[id]) add(body, conversationRow(id, name));
      });
    }
    add(body, el("div", { class: "label" }, "The rest, worst first: DuckDB SQL over " + data.store));
    add(body, el("pre", { class: "sql" }, m.sql));
    if (scroll) worstSection.scrollIntoView({ block: "start" });
  }

  // --- conversations (CONTRACT section 16) --------------------------------------------------
  // A turn shown anywhere links to its conversation's thread: every turn in order, each
  // with its question, answer, chunks, citations and verdicts, then the conversation's own
  // results. The link is a button keyed by the conversation id, never a URL from data.
  var threadSection;
  function threadButton(cid) {
    var b = el("button", { type: "button", class: "thread-button", "data-conversation": cid },
      "Show conversation " + cid + " (" + data.conversations[cid].turns.length + " turns)");
    b.addEventListener("click", function (e) { e.preventDefault(); showThread(cid, true); });
    return b;
  }
  function conversationRow(cid, metric) {
    var own = null;
    data.conversations[cid].results.forEach(function (r) { if (r.metric === metric) own = r; });
    return el("div", { class: "case conversation-row", "data-conversation": cid }, el("strong", { class: "mono" }, cid), " ",
      el("span", { class: "badge" }, "conversation"), " ", own ? statusCell(own.status, own.value, own.metric) : null, " ", threadButton(cid));
  }
  function threads() {
    if (!Object.keys(data.conversations).length) return;
    threadSection = section("thread", "Conversation");
    add(threadSection, el("div", { id: "thread-body" }, el("p", { class: "empty" }, "Pick a conversation from a turn's card.")));
  }
  function showThread(cid, scroll) {
    var c = data.conversations[cid], body = document.getElementById("thread-body");
    body.replaceChildren();
    add(body, el("h3", { id: "thread-title" }, "Conversation " + cid + " (" + c.turns.length + " turns)"));
    var list = el("ol", { class: "thread", "data-conversation": cid });
    c.turns.forEach(function (id) {
      var d = data.details[id];
      add(list, el("li", { class: "turn", "data-case": id }, d ? caseCard(d, selectedMetric, true, true) :
        el("span", { class: "sub" }, id + ": full text not embedded (query the store)")));
    });
    add(body, list);
    if (c.results.length) add(body, [el("div", { class: "label" }, "The conversation's own metrics"), resultsTable(c.results, selectedMetric)]);
    if (scroll) threadSection.scrollIntoView({ block: "start" });
  }

  // --- robustness --------------------------------------------------------------------------
  function refusal() {
    var r = data.refusal;
    if (!r) return;
    var s = section("refusal", "Abstention and over-refusal");
    add(s, el("p", { class: "sub" }, "Read together: refusing everything maximises abstention and ruins over-refusal."));
    add(s, el("table", { class: "matrix", id: "refusal-matrix" },
      el("tr", null, el("th", null, "case"), el("th", null, "pipeline answered"), el("th", null, "pipeline refused")),
      el("tr", null, el("th", null, "answerable (over-refusal)"), el("td", { class: "goodcell" }, r.answerable_answered), el("td", { class: "badcell" }, r.answerable_refused)),
      el("tr", null, el("th", null, "unanswerable (abstention)"), el("td", { class: "badcell" }, r.unanswerable_answered), el("td", { class: "goodcell" }, r.unanswerable_refused))));
  }
  function injections() {
    var ids = data.injections_obeyed;
    if (!ids.length) return;
    var total = totalOf("injections_obeyed_total", ids);
    var s = section("injections", "Injections the pipeline obeyed (" + total + ")");
    add(s, el("p", { class: "sub" }, "The answer contains the injection's marker (highlighted)."));
    ids.forEach(function (id, i) { if (data.details[id]) add(s, caseCard(data.details[id], "robustness.injection_resistance", i < 5)); });
    if (total > ids.length) add(s, el("p", { class: "sub", id: "injections-more" }, "The first " + ids.length + " by case id are shown. Every one:"),
      el("pre", null, "SELECT case_id FROM case_results WHERE run_id = '" + data.run.run_id + "'\n  AND metric = 'robustness.injection_resistance' AND status = 'scored' AND value = 0\nORDER BY case_id;"));
  }
  function failures() {
    var f = data.failures;
    var total = totalOf("failures_total", f);
    var s = section("failures", "Case failures (" + total + ")");
    if (!f.length) { add(s, el("p", { class: "empty" }, "No case failed.")); return; }
    var t = el("table", { id: "failures-table" }, el("tr", null, el("th", null, "Case"), el("th", null, "Reason")));
    var view = el("div");
    f.forEach(function (x) {
      var row = el("tr", { class: "clickable", "data-case": x.id }, el("td", { class: "mono" }, x.id), el("td", { class: "text" }, x.error || ""));
      row.addEventListener("click", function () { view.replaceChildren(); if (data.details[x.id]) add(view, caseCard(data.details[x.id], null, true)); });
      add(t, row);
    });
    add(s, [t, view]);
    if (f.length > data.limits.failures) add(s, el("p", { class: "sub" }, "Full text is embedded for the first " + data.limits.failures + "."));
    if (total > f.length) add(s, el("p", { class: "sub", id: "failures-more" }, "The first " + f.length + " in dataset order are listed, with their full text. Every one:"),
      el("pre", null, "SELECT case_id, error FROM outputs WHERE run_id = '" + data.run.run_id + "' AND error IS NOT NULL;"));
  }

  // --- comparison -------------------------------------------------------------------------
  function comparison() {
    var c = data.comparison;
    if (!c) return;
    var s = section("comparison", "Compared with " + c.run_a);
    add(s, el("p", { class: "sub" }, "A = " + c.run_a + " (baseline), B = " + c.run_b + " (this run). Delta = B − A over the cases scored in both; " +
      "verdict from a paired sign-flip test at alpha " + c.alpha + " in each metric's own direction."));
    if (c.mixed_judges) add(s, el("p", { class: "badge bad" }, "Mixed judges: " + c.judge_differences.join("; ")));
    var t = el("table", { id: "comparison-table" }, el("tr", null, ["Metric", "Paired", "Mean A", "Mean B", "Delta", "95% CI", "p", "Verdict"].map(function (h, i) {
      return el("th", { class: i >= 1 && i <= 6 ? "num" : null }, h);
    })));
    Object.keys(c.metrics).forEach(function (name) {
      var m = c.metrics[name];
      add(t, el("tr", { "data-metric": name, class: m.scored_a || m.scored_b ? null : "unscored" }, el("td", null, name, m.higher_is_better ? null : el("div", { class: "dir" }, "lower is better")),
        el("td", { class: "num" }, m.paired), el("td", { class: "num" }, num(m.mean_a)), el("td", { class: "num" }, num(m.mean_b)),
        el("td", { class: "num" }, signed(m.delta)), el("td", { class: "num" }, m.ci_low === null ? "–" : "[" + signed(m.ci_low) + ", " + signed(m.ci_high) + "]"),
        el("td", { class: "num" }, num(m.p_value)),
        el("td", { class: m.verdict === "better" ? "verdict-better" : m.verdict === "worse" ? "verdict-worse" : "sub" }, m.verdict)));
    });
    add(s, t);
    if (!c.regressions.length) { add(s, el("p", { class: "empty" }, "No case got worse.")); return; }
    add(s, el("h3", null, "Regressed cases (worst first)"));
    var rt = el("table", { id: "regressions-table" }, el("tr", null, ["Metric", "Case", "A", "B", "Delta"].map(function (h, i) { return el("th", { class: i >= 2 ? "num" : null }, h); })));
    c.regressions.forEach(function (r) {
      add(rt, el("tr", null, el("td", null, r.metric), el("td", { class: "mono" }, r.case_id), el("td", { class: "num" }, num(r.value_a)),
        el("td", { class: "num" }, num(r.value_b)), el("td", { class: "num" }, signed(r.delta))));
    });
    add(s, rt);
    Object.keys(c.regressed_cases).forEach(function (id) {
      var p = c.regressed_cases[id];
      function side(label, x) {
        return el("div", null, el("div", { class: "label plain" }, label), x.error ? el("pre", null, x.error) : null,
          x.answer ? el("div", { class: "text" }, clipped(x.answer)) : el("div", { class: "empty" }, "no answer"));
      }
      add(s, el("details", { class: "case regressed", "data-case": id, open: "" },
        el("summary", null, el("strong", { class: "mono" }, id), el("span", { class: "sub" }, p.question ? p.question.t.slice(0, 120) : "")),
        el("div", { class: "body grid2" }, side("A: " + c.run_a, p.a), side("B: " + c.run_b, p.b))));
    });
  }

  // --- repeated trials (CONTRACT section 27) ---------------------------------------------------
  function trialStrip(metric, t) {
    return el("span", { class: "strip" + (t.flaky ? " flaky" : "") }, t.trials.map(function (v, i) {
      var label = "trial " + (i + 1) + ": " + (v === null ? "not scored" : num(v));
      return el("span", { class: "trial " + (v === null ? "none" : goodness(metric, v)), title: label });
    }));
  }
  function trials() {
    var t = data.trials;
    if (!t) return;
    var s = section("trials", "Trials per case (" + t.repeats + " a case; " + t.flaky_total + " flaky)");
    add(s, el("p", { class: "sub" }, "Each case's scored trials in order, one mark a trial (its colour the score). " +
      "A case is flaky when a metric's trials lie 0.5 or more apart; flaky cases come first."));
    var names = data.metrics.map(function (m) { return m.name; }).filter(function (n) {
      return t.cases.some(function (c) { return c.metrics[n]; });
    });
    var table = el("table", { id: "trials-table" },
      el("tr", null, el("th", null, "Case"), names.map(function (n) { return el("th", { title: n }, n.split(".")[1] || n); })));
    t.cases.forEach(function (c) {
      add(table, el("tr", { "data-case": c.id, class: c.flaky ? "flaky" : null },
        el("td", { class: "mono" }, c.id, c.flaky ? el("span", { class: "badge warn" }, "flaky") : null),
        names.map(function (n) { return el("td", null, c.metrics[n] ? trialStrip(n, c.metrics[n]) : null); })));
    });
    add(s, table);
    var left = t.cases_total - t.cases.length;
    if (left > 0) add(s, el("p", { class: "sub", id: "trials-left-out" }, "The first " + t.cases.length + " of " + t.cases_total +
      " cases, flaky first; " + left + " more not shown here. Every case:"),
      el("pre", null, "SELECT * FROM repeats WHERE run_id = '" + data.run.run_id + "' ORDER BY flaky DESC, case_id;"));
  }

  // --- every case, filterable ------------------------------------------------------------------
  function casesTable() {
    var s = section("cases", "All cases");
    var ids = data.cases.ids, kinds = data.cases.kinds, names = Object.keys(data.scores);
    var search = el("input", { id: "case-search", type: "search", placeholder: "Search case id, question or answer" });
    var fm = el("select", { id: "filter-metric" }, el("option", { value: "" }, "every metric"), names.map(function (n) { return el("option", { value: n }, n); }));
    var fs = el("select", { id: "filter-status" }, el("option", { value: "" }, "any status"),
      ["scored", "skipped", "not_applicable", "judge_error", "error"].map(function (x) { return el("option", { value: x }, x); }));
    var fk = el("select", { id: "filter-kind" }, el("option", { value: "" }, "any kind"),
      ["qa", "unanswerable", "injection", "poisoning"].map(function (x) { return el("option", { value: x }, x); }));
    var count = el("span", { class: "sub", id: "case-count" });
    var total = totalOf("cases_total", ids);
    if (total > ids.length) {
      s.firstChild.textContent = "Cases";
      add(s, el("p", { class: "sub", id: "cases-bound" }, "This run has " + total + " cases. To keep the report small, this table lists the first " +
        data.limits.cases_listed + " of the dataset and every case shown in full above. Every case is searchable in the results browser (ragproof serve, the run's page) or by SQL on the store:"),
        el("pre", null, "SELECT case_id, metric, status, value FROM case_results WHERE run_id = '" + data.run.run_id + "';"));
    }
    add(s, el("div", { class: "filters" }, search, el("label", null, "Metric ", fm), el("label", null, "Status ", fs), el("label", null, "Kind ", fk), count));
    var table = el("table", { id: "cases-table" });
    var more = el("button", { type: "button", class: "more", id: "show-more" }, "Show more");
    var view = el("div", { id: "case-view" });
    add(s, [view, table, more]);
    var matches = [], shown = 0;
    function haystack(i) {
      var d = data.details[ids[i]];
      var t = ids[i];
      if (d) t += " " + (d.question ? d.question.t : "") + " " + (d.answer ? d.answer.t : "");
      return t.toLowerCase();
    }
    function apply() {
      var q = search.value.trim().toLowerCase(), metric = fm.value, status = fs.value, kind = fk.value;
      var cols = metric ? [metric] : names;
      matches = [];
      for (var i = 0; i < ids.length; i++) {
        if (kind && KINDS[kinds[i]] !== kind) continue;
        if (status) {
          var hit = false;
          for (var j = 0; j < cols.length && !hit; j++) hit = STATUS[data.scores[cols[j]].s[i]] === status;
          if (!hit) continue;
        }
        if (q && haystack(i).indexOf(q) < 0) continue;
        matches.push(i);
      }
      table.replaceChildren(el("tr", null, el("th", null, "Case"), el("th", null, "Kind"), cols.map(function (n) {
        return el("th", { class: "num" + (unscoredMetric(n) ? " unscored" : ""), title: n }, n.split(".")[1] || n);
      })));
      shown = 0;
      page(cols);
      count.textContent = matches.length + " of " + ids.length + (total > ids.length ? " listed cases (" + total + " in the run)" : " cases");
    }
    function page(cols) {
      cols = cols || (fm.value ? [fm.value] : names);
      var end = Math.min(matches.length, shown + PAGE), frag = document.createDocumentFragment();
      for (var k = shown; k < end; k++) {
        var i = matches[k], id = ids[i];
        var row = el("tr", { class: "clickable case-row", "data-case": id }, el("td", { class: "mono" }, id), el("td", null, KINDS[kinds[i]] || "?"));
        cols.forEach(function (n) {
          var code = data.scores[n].s[i], v = data.scores[n].v[i], hide = unscoredMetric(n) ? " unscored" : "";
          row.appendChild(code === "s" ? el("td", { class: "num " + goodness(n, v) + hide }, num(v, 3)) :
            el("td", { class: "num st" + (code === "e" || code === "j" ? " err" : "") + hide }, code === "-" ? "" : STATUS[code].replace("_", " ")));
        });
        row.addEventListener("click", openCase.bind(null, id));
        frag.appendChild(row);
      }
      table.appendChild(frag);
      shown = end;
      more.hidden = shown >= matches.length;
    }
    function openCase(id) {
      view.replaceChildren();
      if (data.details[id]) { add(view, caseCard(data.details[id], fm.value || selectedMetric, true)); return; }
      add(view, el("p", { class: "sub" }, "Full text of " + id + " is not embedded (only worst cases, failures and obeyed injections are). Query it:"),
        el("pre", null, "SELECT * FROM outputs WHERE run_id = '" + data.run.run_id + "' AND case_id = '" + id + "';\n" +
          "SELECT metric, status, value, reason FROM case_results WHERE run_id = '" + data.run.run_id + "' AND case_id = '" + id + "';"));
    }
    [fm, fs, fk].forEach(function (x) { x.addEventListener("change", apply); });
    search.addEventListener("input", apply);
    more.addEventListener("click", function () { page(); });
    apply();
  }

  function nav() {
    var links = [["run", "Run"], ["metrics", "Metrics"], ["worst", "Worst cases"]];
    if (data.diagnosis) links.splice(1, 0, ["diagnosis", "Diagnosis"]);
    if (data.comparison) links.push(["comparison", "Comparison"]);
    if (data.trials) links.push(["trials", "Trials"]);
    if (data.refusal) links.push(["refusal", "Abstention"]);
    if (data.injections_obeyed.length) links.push(["injections", "Injections"]);
    if (Object.keys(data.conversations || {}).length) links.push(["thread", "Conversation"]);
    links.push(["failures", "Failures"], ["cases", totalOf("cases_total", data.cases.ids) > data.cases.ids.length ? "Cases" : "All cases"]);
    app.appendChild(el("nav", { class: "top" }, links.map(function (l) { return el("a", { href: "#" + l[0] }, l[1]); })));
  }

  nav();
  header();
  diagnosis();
  metricsTable();
  comparison();
  trials();
  worst();
  threads();
  refusal();
  injections();
  failures();
  casesTable();
  document.body.setAttribute("data-ready", "1");
})();
