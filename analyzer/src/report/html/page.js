// The report's page: the chain view and its filter, the lists of scenarios and violations, what
// the page leaves out, hooks for the browser test, and the start.

// ---- the chain view ----------------------------------------------------------------------------
const chainView = document.getElementById("chain");
const status = document.getElementById("chain-status");
function show(figures, message) {
  chainView.replaceChildren(...figures);
  status.textContent = message;
}
function figureOf(svg, caption, extra) {
  const f = el("figure");
  f.innerHTML = svg;
  f.append(el("figcaption", {}, caption));
  if (extra) f.append(extra);
  return f;
}
function showViolation(n) {
  const v = page.violations[n - 1];
  if (!v) { show([], `There is no violation ${n}: the check kept ${page.violations.length}.`); return; }
  for (const li of document.querySelectorAll("#violations li")) {
    const current = li.dataset.violation === String(n);
    li.classList.toggle("current", current);
    if (current) {
      const list = document.getElementById("violations-section");
      list.scrollTop = li.offsetTop - list.offsetTop - 40;
    }
  }
  const d = page.drawn[v.drawn];
  const witness = el("pre", {}, "witness rows (marked):\n" + v.witness.join("\n"));
  show([figureOf(drawnSvg(d), `violation ${n}: ${v.invariant} in ${scenarioName(v.scene)} — ${v.text}`, witness)],
    `Violation ${n}: the witness chain of ${v.event || v.task || "the run"}, witness rows marked.`);
}
// Every chain of `name` (task, event or aggregate id) in every scenario: drawn in advance when it
// was, else laid out here from the embedded rows.
function chainsOf(name) {
  const figures = [];
  const id = nameId(name);
  page.scenarios.forEach((sc, si) => {
    const pre = page.drawn.find((d) => d.scene === si && d.what === "task" && d.id === name);
    if (pre) { figures.push(figureOf(drawnSvg(pre), `${sc.scenario}: task ${name} (drawn in advance)`)); return; }
    if (id < 0) return;
    const S = rowsOf(si);
    if (!S) return;
    for (const [key, what] of [["task", "task"], ["event", "event"], ["aggregate", "aggregate"]]) {
      const c = chainOf(S, key, id, what);
      if (c) { figures.push(figureOf(svgOf(layout(c)), `${sc.scenario}: ${what} ${name} (${c.rows.length} rows)`)); return; }
    }
  });
  return figures;
}
function showId(name) {
  const figures = chainsOf(name);
  if (figures.length) show(figures, `The chain of ${name}` + (figures.length > 1 ? ` in ${figures.length} scenarios.` : "."));
  else show([], `No task, event or aggregate is named ${name}.` + (page.caps.rows_embedded < page.caps.rows_total
    ? " (Some scenarios' rows are not embedded: see below.)" : ""));
  return figures.length > 0;
}

// ---- the filter ---------------------------------------------------------------------------------
const filter = document.getElementById("filter");
const suggest = document.getElementById("suggest");
function suggestions(text) {
  suggest.replaceChildren();
  if (!text) return;
  const out = [];
  for (const n of page.names) {
    if (n.startsWith(text) && n !== text) { out.push(n); if (out.length === 8) break; }
  }
  for (const n of out) {
    suggest.append(el("button", { type: "button", onclick: () => { filter.value = n; apply(true); } }, n));
  }
}
function apply(commit) {
  const text = filter.value.trim();
  if (!text) { suggest.replaceChildren(); return; }
  const found = showId(text);
  suggestions(found ? "" : text);
  if (found && commit) history.replaceState(null, "", "#id=" + encodeURIComponent(text));
}
filter.addEventListener("input", () => apply(false));
filter.addEventListener("keydown", (e) => { if (e.key === "Enter") apply(true); });

// ---- scenarios and violations -----------------------------------------------------------------
function summary() {
  document.getElementById("traces").textContent = "Trace: " + page.traces.join(", ");
  const figs = [["tasks", "tasks"], ["publish_attempts", "publish attempts"], ["publish_acks_lost", "publish ACKs lost"],
    ["stream_copies", "stream copies"], ["stream_messages", "stream messages"], ["deliveries", "deliveries"],
    ["redeliveries", "redeliveries"], ["suppressions", "suppressions"], ["effects", "effects"], ["acks", "ACKs"],
    ["crashes", "crashes"], ["conflicts", "conflicts"], ["counter", "counter"], ["results", "results"],
    ["dedup_keys", "dedup keys"], ["outbox_pending", "outbox pending"]];
  const brief = ["tasks", "effects", "redeliveries", "suppressions", "crashes", "counter"];
  const table = el("table", {}, el("tr", {}, ...["scenario", "run", "backend", "verdict", "not passed", "events", ...brief]
    .map((h) => el("th", {}, h))));
  const details = document.getElementById("details");
  page.scenarios.forEach((s, si) => {
    const off = s.invariants.filter((i) => i.verdict !== "pass")
      .map((i) => el("span", { class: "verdict-" + i.verdict }, `${i.id} (${i.verdict}) `));
    table.append(el("tr", {}, el("td", {}, el("a", { href: "#scenario-" + si, onclick: () => { box.open = true; } }, s.scenario)),
      el("td", {}, s.run_id), el("td", {}, s.backend + (s.protocol ? " · " + s.protocol : "")),
      el("td", { class: "verdict-" + s.verdict }, s.verdict), el("td", {}, ...(off.length ? off : ["-"])),
      el("td", { class: "num" }, String(s.rows)), ...brief.map((k) => el("td", { class: "num" }, fmtInt(s.figures[k])))));
    const inv = el("table", {}, el("tr", {}, el("th", {}, "invariant"), el("th", {}, "class"),
      el("th", {}, "verdict"), el("th", {}, "violations"), el("th", {}, "reason")));
    for (const i of s.invariants) {
      inv.append(el("tr", {}, el("td", {}, i.id), el("td", {}, i.class),
        el("td", { class: "verdict-" + i.verdict }, i.verdict), el("td", { class: "num" }, String(i.violations)),
        el("td", {}, i.reason || "")));
    }
    const fig = el("table", {}, el("tr", {}, el("th", {}, "figure"), el("th", {}, "value")));
    for (const [k, name] of figs) {
      const v = s.figures[k];
      if (v === null || v === undefined) continue;
      fig.append(el("tr", {}, el("td", {}, name), el("td", { class: "num" }, fmtInt(v))));
    }
    const box = el("details", { class: "scenario", id: "scenario-" + si },
      el("summary", {}, `${s.scenario} `, el("span", { class: "verdict-" + s.verdict }, s.verdict),
        el("span", { class: "muted" }, ` · run ${s.run_id} · ${s.backend}` + (s.protocol ? ` · protocol ${s.protocol}` : "") +
          ` · ${s.rows} events` + (s.recovered === null ? "" : s.recovered ? " · recovered" : " · not recovered"))),
      el("div", { class: "tables" }, inv, fig));
    details.append(box);
  });
  document.getElementById("scenarios").append(table);
}
function violationList() {
  const list = document.getElementById("violations");
  const note = document.getElementById("violations-note");
  if (!page.violations.length) { note.textContent = "No invariant failed: no violation to show."; return; }
  note.textContent = `${page.violations.length} violation(s), numbered as analyzer chain --violation N numbers them.` +
    " Click one to see its witness chain.";
  for (const v of page.violations) {
    list.append(el("li", { "data-violation": String(v.number),
      "data-event": v.event, "data-task": v.task,
      onclick: () => { location.hash = "violation-" + v.number; showViolation(v.number); } },
    el("div", { class: "head" }, `${v.number}. ${v.invariant} `, el("span", { class: "muted" }, "in " + scenarioName(v.scene))),
    el("div", { class: "who" }, [v.event ? "event " + v.event : null, v.task ? "task " + v.task : null].filter(Boolean).join(" · ")),
    el("div", { class: "text" }, v.text)));
  }
}
function caps() {
  const c = page.caps;
  const items = [
    `Chains drawn in advance: the witness chain of every violation kept, and the ${c.eventful} most eventful tasks of each scenario. Any other task, event or aggregate is drawn here from the embedded rows.`,
    `A chain shows at most ${c.steps} steps; the rest are counted ("N more events not shown").`,
    `The check keeps ${c.examples} violations per invariant and scenario` +
      (c.violations_not_kept ? `; ${c.violations_not_kept} more were counted but not kept.` : "; none was left out here."),
    c.rows_embedded < c.rows_total
      ? `Rows embedded: ${c.rows_embedded} of ${c.rows_total} (at most ${c.max_rows}). Without their rows, ` +
        page.scenarios.map((s, i) => (document.getElementById("rows-" + i) ? null : `${s.scenario} (run ${s.run_id})`))
          .filter(Boolean).join(", ") + " show only the chains drawn in advance and no timeline."
      : `Rows embedded: all ${c.rows_total}.`,
  ];
  if (c.scenarios_embedded < c.scenarios_total) {
    items.push(`Scenarios embedded: the first ${c.scenarios_embedded} of ${c.scenarios_total} (at most ${c.max_scenarios}); ` +
      `the others are left out here; analyzer check lists every scenario.`);
  }
  document.getElementById("caps").replaceChildren(...items.map((t) => el("li", {}, t)));
}

// ---- hooks for the browser test -----------------------------------------------------------------
const textsOf = (svg) => [...new DOMParser().parseFromString(svg, "image/svg+xml").querySelectorAll("text")]
  .map((t) => t.textContent.trim());
window.outboxReport = {
  // Milliseconds from navigation: lists built, timeline drawn (read by scripts/bench-html.sh).
  marks: {},
  // Draws every task chain drawn in advance again from the embedded rows and compares the texts.
  compareDrawn() {
    let compared = 0;
    const differ = [];
    for (const d of page.drawn.filter((x) => x.what === "task")) {
      const S = rowsOf(d.scene);
      if (!S) continue;
      const c = chainOf(S, "task", nameId(d.id), "task");
      const [a, b] = [textsOf(d.svg), textsOf(svgOf(layout(c)))];
      compared++;
      const at = a.findIndex((t, i) => t !== b[i]);
      if (at >= 0 || a.length !== b.length) {
        const i = at >= 0 ? at : Math.min(a.length, b.length);
        differ.push({ title: d.title, first: `text ${i}: analyzer ${JSON.stringify(a[i])}, page ${JSON.stringify(b[i])}` });
      }
    }
    return { compared, differ };
  },
  // Crashes on the timeline of the whole first run, and the figures' count for its scenarios.
  timelineCrashes() {
    zoom(tl.start, tl.end);
    return { shown: tl.crashes, figures: tl.run.scenes.reduce((n, si) => n + page.scenarios[si].figures.crashes, 0) };
  },
};

// ---- start ----------------------------------------------------------------------------------------
function fromHash() {
  const h = decodeURIComponent(location.hash.slice(1));
  const m = /^violation-(\d+)$/.exec(h);
  if (m) { showViolation(Number(m[1])); return; }
  if (h.startsWith("id=")) { filter.value = h.slice(3); apply(false); }
}
summary();
violationList();
caps();
window.addEventListener("hashchange", fromHash);
fromHash();
window.outboxReport.marks.lists = performance.now();
// The timeline reads every row: draw it after the lists' first paint.
requestAnimationFrame(() => setTimeout(() => {
  timeline();
  window.outboxReport.marks.timeline = performance.now();
}, 0));
