"use strict";
// Experiments: the console's (created here from the live list and the zone's saved
// draft, a strategy or nothing personalized; started, stopped, ended) and those of
// vitrine.toml, each variant against the control with its always-valid interval drawn,
// the days a lift needs, and the timeline of the zone's campaign changes. And the
// store-wide holdout: switched on and off, its groups, and what personalization added.
(function () {
  const METRICS = ["viewThrough", "conversion", "revenuePerVisitor", "clickThrough"];
  const SVG = "http://www.w3.org/2000/svg";
  const local = { etag: null, asked: 0 };

  const accountPath = () => "accounts/" + encodeURIComponent(state.account.accessKey);

  /** An interval [low, high] of a relative difference with its estimate, on an axis
   * symmetric about 0 (marked) that holds the interval: green when it excludes 0. */
  function intervalPlot(metric, comparison) {
    const width = 240;
    const height = 18;
    const reach = comparison ? Math.max(0.1, Math.abs(comparison.low), Math.abs(comparison.high)) * 1.1 : 1;
    const x = (v) => width / 2 + Math.max(-1, Math.min(1, v / reach)) * (width / 2 - 4);
    const svg = document.createElementNS(SVG, "svg");
    svg.setAttribute("width", width);
    svg.setAttribute("height", height);
    svg.setAttribute("class", "interval" + (comparison && comparison.significant ? " significant" : ""));
    svg.setAttribute("role", "img");
    svg.dataset.metric = metric;
    const line = (x1, x2, y1, y2, cls) => {
      const l = document.createElementNS(SVG, "line");
      for (const [k, v] of [["x1", x1], ["x2", x2], ["y1", y1], ["y2", y2]]) l.setAttribute(k, v);
      l.setAttribute("class", cls);
      svg.appendChild(l);
    };
    line(width / 2, width / 2, 0, height, "zero");
    if (!comparison) {
      svg.setAttribute("aria-label", metric + ": not enough data yet");
      return svg;
    }
    svg.dataset.low = comparison.low;
    svg.dataset.high = comparison.high;
    svg.setAttribute(
      "aria-label",
      metric + " " + percent(comparison.relative) + ", interval " + percent(comparison.low) + " to " + percent(comparison.high),
    );
    line(x(comparison.low), x(comparison.high), height / 2, height / 2, "range");
    const dot = document.createElementNS(SVG, "circle");
    dot.setAttribute("cx", x(comparison.relative));
    dot.setAttribute("cy", height / 2);
    dot.setAttribute("r", 3);
    svg.appendChild(dot);
    return svg;
  }

  function variantRow(v, currency) {
    return el(
      "tr",
      { dataset: { variant: v.name } },
      el("td", {}, v.name + (v.control ? " (control)" : "")),
      el("td", {}, v.strategy || "–"),
      el("td", { className: "number visitors" }, v.counts.visitors),
      el("td", { className: "number impressions" }, v.counts.impressions),
      el("td", { className: "number view-through" }, percent(v.counts.viewThroughRate)),
      el("td", { className: "number click-through" }, percent(v.counts.clickThroughRate)),
      el("td", { className: "number conversion" }, percent(v.conversion)),
      el("td", { className: "number rpv" }, v.revenuePerVisitorCapped === null || v.revenuePerVisitorCapped === undefined ? "–" : v.revenuePerVisitorCapped + " " + currency),
      el(
        "td",
        {},
        (v.verdicts || []).map((text, i) => {
          const metric = METRICS[i];
          const comparison = v.againstControl && v.againstControl[metric];
          return el(
            "div",
            { className: "verdict" + (comparison && comparison.significant ? " significant" : ""), dataset: { metric } },
            text,
            metric === "conversion" || metric === "revenuePerVisitor" ? intervalPlot(metric, comparison) : null,
          );
        }),
        v.toShow
          ? el(
              "div",
              { className: "to-show" },
              "A " + Math.round(v.toShow.lift * 100) + " % lift would show in " +
                (v.toShow.conversionDays === null ? "–" : v.toShow.conversionDays) + " more days (conversion), " +
                (v.toShow.revenuePerVisitorDays === null ? "–" : v.toShow.revenuePerVisitorDays) + " (revenue per visitor)",
            )
          : null,
      ),
    );
  }

  async function act(id, action) {
    $("ex-error").textContent = "";
    const path = accountPath() + "/experiments/" + encodeURIComponent(id) + (action === "delete" ? "" : "/" + action);
    try {
      await call(action === "delete" ? "DELETE" : "POST", path);
    } catch (error) {
      $("ex-error").textContent = error.message;
    }
    await show();
  }

  function controls(e) {
    const buttons = [];
    const button = (action, label) => {
      const node = el("button", { type: "button", className: "edit ex-" + action }, label);
      node.addEventListener("click", () => act(e.id, action).catch(showLoggedOut));
      buttons.push(node);
    };
    if (e.status === "draft") {
      button("start", "Start");
      button("delete", "Delete");
    } else if (e.status === "running") {
      button("stop", "Stop");
      button("end", "End");
    } else if (e.status === "stopped") {
      button("start", "Start again");
      button("end", "End");
    }
    return el("div", { className: "controls" }, buttons);
  }

  /** The experiment's timeline of campaign changes; `open` keeps it unfolded across a
   * refresh of the list. */
  function timeline(e, open) {
    if (!e.timeline || !e.timeline.length) return null;
    return el(
      "details",
      { className: "timeline", open },
      el("summary", {}, "Timeline (" + e.timeline.length + ")"),
      el(
        "ol",
        {},
        e.timeline.map((t) => {
          const day = new Date(t.at).toISOString().slice(0, 10);
          const split =
            t.kind === "campaigns" ? el("button", { type: "button", className: "split", dataset: { from: day } }, "Results from this day") : null;
          if (split) split.addEventListener("click", () => splitAt(day).catch(showLoggedOut));
          return el(
            "li",
            { dataset: { kind: t.kind, version: t.version } },
            new Date(t.at).toISOString().replace("T", " ").slice(0, 16) + " · " + t.author + " · " + t.summary + " ",
            split,
          );
        }),
      ),
    );
  }

  function experimentBlock(e, currency, opened) {
    const status = e.status || (e.running ? "running" : "not running");
    const title = (e.name ? e.name + " (" + e.id + ")" : e.id) + " on " + e.zone + " — " + status +
      (e.source === "configuration" ? ", from vitrine.toml" : "");
    return el(
      "div",
      { className: "experiment", dataset: { id: e.id, status, source: e.source } },
      el("h3", {}, title),
      e.source === "console" ? controls(e) : null,
      el(
        "table",
        {},
        el(
          "thead",
          {},
          el(
            "tr",
            {},
            ["Variant", "Strategy", "Visitors", "Impressions", "View-through", "Click-through", "Conversion", "Revenue/visitor (capped)", "Against the control"].map((h) =>
              el("th", {}, h),
            ),
          ),
        ),
        el("tbody", {}, e.variants.map((v) => variantRow(v, currency))),
      ),
      e.revenueCap ? el("p", { className: "cap" }, "Each visitor's revenue counted up to " + e.revenueCap + " " + currency + " (the 99th percentile).") : null,
      timeline(e, opened.has(e.id)),
    );
  }

  /** Results read from `day` on (a split at a campaign change); none: whole. */
  async function splitAt(day) {
    local.from = day;
    await show();
  }

  async function show() {
    const asked = ++local.asked;
    const answer = await call("GET", accountPath() + "/experiments" + (local.from ? "?from=" + local.from : ""));
    // An older answer arriving after a newer one would draw stale results.
    if (asked !== local.asked) return;
    local.etag = answer.etag;
    const results = answer.body;
    $("no-experiments").hidden = results.experiments.length > 0;
    const whole = el("button", { type: "button", id: "ex-whole" }, "Whole experiments");
    whole.addEventListener("click", () => splitAt(null).catch(showLoggedOut));
    const split = results.from ? el("p", { id: "ex-split" }, "Results from " + results.from + " on. ", whole) : null;
    const opened = new Set(
      [...$("experiment-list").querySelectorAll(".experiment")].filter((b) => b.querySelector(".timeline[open]")).map((b) => b.dataset.id),
    );
    $("experiment-list").replaceChildren(
      ...[split].filter(Boolean),
      ...results.experiments.map((e) => experimentBlock(e, results.currency, opened)),
    );
    const zones = state.account.zones.filter((z) => z.type === "recommender-product");
    const current = $("ex-zone").value;
    $("ex-zone").replaceChildren(...zones.map((z) => el("option", { value: z.id }, z.id + " — " + z.title)));
    if (current) $("ex-zone").value = current;
  }

  /** The variant the form's `side` (a or b) describes; the zone's saved draft for a
   * draft variant. */
  async function variantFrom(side, zone) {
    const kind = $("ex-" + side + "-kind").value;
    const variant = { name: side.toUpperCase(), share: Number($("ex-" + side + "-share").value), kind };
    const strategy = ($("ex-" + side + "-strategy") || { value: "" }).value.trim();
    if ((kind === "strategy" || kind === "none") && strategy) variant.strategy = strategy;
    if (kind === "draft") {
      const draft = await call("GET", accountPath() + "/zones/" + encodeURIComponent(zone) + "/draft");
      const saved = draft.body && draft.body.draft && draft.body.draft.body;
      if (!saved || !Array.isArray(saved.campaigns)) {
        throw new Error("zone " + zone + " has no saved draft: save one in the campaign editor first");
      }
      variant.campaigns = saved.campaigns;
    }
    return variant;
  }

  async function create(event) {
    event.preventDefault();
    $("ex-error").textContent = "";
    const id = $("ex-id").value.trim();
    const zone = $("ex-zone").value;
    try {
      const body = { zone, variants: [await variantFrom("a", zone), await variantFrom("b", zone)] };
      const name = $("ex-name").value.trim();
      if (name) body.name = name;
      const headers = local.etag ? { "If-Match": local.etag } : {};
      await call("PUT", accountPath() + "/experiments/" + encodeURIComponent(id), body, headers);
      $("ex-form").reset();
    } catch (error) {
      const problems = error.body && error.body.errors ? error.body.errors.map((e) => e.path + ": " + e.message).join("; ") : "";
      $("ex-error").textContent = problems || error.message;
    }
    await show();
  }

  /** The holdout: its setting, its groups' store-wide figures and the personalized
   * group against the held-out one. */
  async function showHoldout() {
    const answer = await call("GET", accountPath() + "/holdout");
    local.holdoutEtag = answer.etag;
    const h = answer.body;
    const period = h.period;
    $("ho-status").textContent = h.on
      ? h.share + " % of shoppers held out since " + period.from.replace("T", " ").slice(0, 16) + " UTC; they see " + h.strategy + "."
      : period
        ? "The holdout is off (it was on from " + period.from.slice(0, 10) + " to " + (period.to || "").slice(0, 10) + "; its figures below)."
        : "The holdout is off.";
    $("ho-off").disabled = !h.on;
    if (h.on) {
      $("ho-share").value = h.share;
      $("ho-strategy").value = h.strategy;
    }
    const groups = h.groups || [];
    $("ho-groups").hidden = groups.length === 0;
    const money = (v) => (v === null || v === undefined ? "–" : v + " " + h.currency);
    $("ho-groups").querySelector("tbody").replaceChildren(
      ...groups.map((g) =>
        el(
          "tr",
          { dataset: { group: g.name } },
          el("td", {}, g.name === "holdout" ? "held out" : "personalized"),
          el("td", { className: "number visitors" }, g.visitors),
          el("td", { className: "number ordering" }, g.orderingVisitors),
          el("td", { className: "number conversion" }, percent(g.conversion)),
          el("td", { className: "number revenue" }, money(g.revenue)),
          el("td", { className: "number rpv" }, money(g.revenuePerVisitorCapped)),
        ),
      ),
    );
    const added = h.added || {};
    $("ho-added").replaceChildren(
      ...(h.verdicts || []).map((text, i) => {
        const metric = ["conversion", "revenuePerVisitor"][i];
        const comparison = added[metric];
        return el(
          "div",
          { className: "verdict" + (comparison && comparison.significant ? " significant" : ""), dataset: { metric } },
          text,
          intervalPlot(metric, comparison),
        );
      }),
    );
  }

  async function holdout(on) {
    $("ho-error").textContent = "";
    const headers = local.holdoutEtag ? { "If-Match": local.holdoutEtag } : {};
    try {
      if (on) {
        const body = { share: Number($("ho-share").value), strategy: $("ho-strategy").value };
        await call("PUT", accountPath() + "/holdout", body, headers);
      } else {
        await call("DELETE", accountPath() + "/holdout", undefined, headers);
      }
    } catch (error) {
      const problems = error.body && error.body.errors ? error.body.errors.map((e) => e.path + ": " + e.message).join("; ") : "";
      $("ho-error").textContent = problems || error.message;
    }
    await showHoldout();
  }

  $("ex-form").addEventListener("submit", (event) => create(event).catch(showLoggedOut));
  $("ho-form").addEventListener("submit", (event) => {
    event.preventDefault();
    holdout(true).catch(showLoggedOut);
  });
  $("ho-off").addEventListener("click", () => holdout(false).catch(showLoggedOut));
  window.vitrineExperiments = { show: () => Promise.all([show(), showHoldout()]) };
})();
