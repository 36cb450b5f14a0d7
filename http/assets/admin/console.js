// Vitrine's console: a zone's campaign list (order, audience, schedule, content, status
// and the last 7 days' figures), reordered with the mouse or the keyboard; the campaign
// editor (its form is `editor.js`); the preview ("show this zone as…"); the
// shadow test of the draft against live traffic; publishing with the ETag loaded (a
// conflict shows what changed meanwhile); the audit log is `history.js`. A viewer's token
// gets no edit controls; the list being edited is kept on the server as the zone's draft
// (`drafts.js`). Uses `$`, `el`, `call`, `state`, `segmentBuilder` and `DraftKeeper`.
"use strict";

/** The names the campaign document takes, as this server reads them
 * (`GET campaigns/vocabulary`, loaded before the console is shown): strategies, filter
 * and condition kinds, page types, devices, UTM parameters, user-record fields, days. */
const vocabulary = {
  strategies: [], filterKinds: [], conditionKinds: [], pageTypes: [], devices: [], utmParameters: [], userFields: [], days: [],
};

/** How each filter kind's value is entered (a kind the console does not know: a list). */
const FILTER_SHAPES = {
  categoryIn: "list", categoryNotIn: "list", brandIn: "list", brandNotIn: "list", price: "range",
  onOffer: "flag", newArrival: "flag", sameCategory: "flag", sameBrand: "flag", priceWithin: "number",
  searchTag: "list", productNotIn: "list",
};

/** What a preview judged of the request, in words. */
function requestText(request) {
  if (!request) return "";
  const parts = [];
  parts.push(request.device ? "a " + request.device + " device" : "no known device");
  parts.push(request.referrerHost ? "from " + request.referrerHost : "no referrer");
  const utm = Object.entries(request.utm || {}).map(([name, value]) => "utm_" + name + "=" + value);
  parts.push(utm.length ? utm.join(", ") : "no UTM parameters");
  return "Judged as a request with " + parts.join(", ") + ".";
}

/** The draft of the zone shown. */
const zoneDraft = new DraftKeeper("campaigns", document.getElementById("cz-draft"));

const campaigns = {
  zone: null,
  list: [],
  published: "[]",
  etag: null,
  loadedVersion: 0,
  status: {},
  timeZone: "UTC",
  stats: {},
  editing: null,
  shadowTimer: null,

  key() {
    return encodeURIComponent(state.account.accessKey);
  },

  editor() {
    return state.role === "editor";
  },

  /** The account's product zones in the picker, and the first one's list. */
  async show() {
    // Campaigns fill product, image and html zones (category and brand zones keep
    // their configuration).
    const zones = state.account.zones.filter((z) => z.type !== "recommender-category" && z.type !== "recommender-brand");
    $("cz-zone").replaceChildren(...zones.map((z) => el("option", { value: z.id }, z.id + " — " + z.title)));
    if (!vocabulary.strategies.length) {
      Object.assign(vocabulary, (await call("GET", "campaigns/vocabulary")).body);
      $("ce-strategy").replaceChildren(...vocabulary.strategies.map((s) => el("option", { value: s }, s)));
    }
    $("pv-page-type").replaceChildren(el("option", { value: "" }, "any"), ...vocabulary.pageTypes.map((p) => el("option", { value: p }, p)));
    await segmentBuilder.load();
    if (zones.length) await this.load(zones[0].id);
    await Promise.all([this.history(), this.recentVisitors()]);
  },

  async load(zone) {
    this.zone = zone;
    $("cz-zone").value = zone;
    const base = "accounts/" + this.key() + "/zones/" + encodeURIComponent(zone);
    const answer = await call("GET", base + "/campaigns");
    const body = answer.body;
    this.list = body.campaigns || [];
    this.published = JSON.stringify(this.list);
    // The zone's draft on the server, when it has one, is what is edited.
    const draft = await zoneDraft.load(base + "/draft", this.list);
    if (draft) this.list = draft;
    this.etag = answer.etag;
    this.loadedVersion = body.version;
    this.status = Object.fromEntries((body.status || []).map((s) => [s.id, s.status]));
    this.next = Object.fromEntries((body.status || []).map((s) => [s.id, s.next]));
    this.timeZone = body.timeZone || "UTC";
    for (const zone of document.querySelectorAll(".ce-zone")) zone.textContent = this.timeZone;
    $("cz-source").textContent =
      (body.source === "live" ? "Live list, version " + body.version : "Filled as configured (no list yet)") +
      " · time zone " + this.timeZone;
    $("ce-time-zone").textContent = this.timeZone;
    $("cz-conflict").hidden = true;
    this.closeEditor();
    await this.loadStats();
    this.render();
    await this.refreshShadow();
  },

  /** Impressions, click-through and revenue of each campaign over the last 7 days. */
  async loadStats() {
    const day = (ms) => new Date(ms).toISOString().slice(0, 10);
    const now = Date.now();
    const range = "from=" + day(now - 6 * 86400000) + "&to=" + day(now);
    const analytics = await call("GET", "accounts/" + this.key() + "/analytics?" + range);
    this.stats = {};
    for (const row of analytics.body.zones) {
      if (row.zone === this.zone && row.campaign) this.stats[row.campaign] = row.totals;
    }
  },

  dirty() {
    return JSON.stringify(this.list) !== this.published;
  },

  /** A campaign's status now; `draft` when it differs from every published one
   * (`published` holds the published campaigns, each as its JSON text). */
  statusOf(campaign, published) {
    if (!published.has(JSON.stringify(campaign))) return "draft";
    return this.status[campaign.id] || "live";
  },

  /** The list as a table: one row per campaign, in the order they are tried. */
  render() {
    const segments = Object.fromEntries(segmentBuilder.segments.map((s) => [s.id, s.name || s.id]));
    const published = new Set(JSON.parse(this.published).map((c) => JSON.stringify(c)));
    const rows = this.list.map((c, at) => {
      const stats = this.stats[c.id];
      const revenue = stats ? stats.revenue.map((r) => r.amount + " " + r.currency).join(", ") || "0" : "–";
      const row = el(
        "tr",
        { dataset: { campaign: c.id }, tabindex: 0, draggable: this.editor() ? "true" : null, "aria-label": "Campaign " + c.id + ", place " + (at + 1) },
        el("td", { className: "number" }, at + 1),
        el("td", {}, c.name || c.id, el("br"), el("small", {}, c.id)),
        el("td", {}, c.segment ? segments[c.segment] || c.segment : "Everyone"),
        el("td", {}, scheduleText(c.schedule, this.timeZone), nextText(this.next && this.next[c.id], this.timeZone)),
        el("td", {}, contentText(c.content)),
        el("td", { className: "status" }, this.statusOf(c, published)),
        el("td", { className: "number impressions" }, stats ? stats.impressions : "–"),
        el("td", { className: "number ctr" }, stats ? percent(stats.clickThroughRate) : "–"),
        el("td", { className: "number revenue" }, revenue),
      );
      if (this.editor()) {
        const cell = el("td", { className: "actions" });
        const button = (text, label, action) => {
          const b = el("button", { type: "button", "aria-label": label, className: "small" }, text);
          b.addEventListener("click", action);
          cell.append(b);
        };
        button("↑", "Move " + c.id + " up", () => this.move(at, at - 1));
        button("↓", "Move " + c.id + " down", () => this.move(at, at + 1));
        button("Edit", "Edit " + c.id, () => this.openEditor(at));
        button("Remove", "Remove " + c.id, () => {
          this.list.splice(at, 1);
          this.render();
        });
        row.append(cell);
        row.addEventListener("keydown", (event) => {
          if (event.altKey && (event.key === "ArrowUp" || event.key === "ArrowDown")) {
            event.preventDefault();
            this.move(at, event.key === "ArrowUp" ? at - 1 : at + 1);
          }
        });
        row.addEventListener("dragstart", (event) => event.dataTransfer.setData("text/plain", String(at)));
        row.addEventListener("dragover", (event) => event.preventDefault());
        row.addEventListener("drop", (event) => {
          event.preventDefault();
          this.move(Number(event.dataTransfer.getData("text/plain")), at);
        });
      }
      return row;
    });
    if (!rows.length) rows.push(el("tr", {}, el("td", { colspan: 10 }, "No campaigns: the zone is filled as configured.")));
    $("cz-table").tBodies[0].replaceChildren(...rows);
    $("cz-dirty").textContent = this.dirty() ? "Unpublished changes." : "";
    zoneDraft.changed(this.list);
  },

  move(from, to) {
    if (to < 0 || to >= this.list.length || from === to) return;
    const [moved] = this.list.splice(from, 1);
    this.list.splice(to, 0, moved);
    this.render();
    const row = $("cz-table").querySelector('tr[data-campaign="' + CSS.escape(moved.id) + '"]');
    if (row) row.focus();
    $("cz-message").textContent = moved.id + " moved to place " + (to + 1) + ".";
  },

  /** Publishes the list with the ETag it was loaded with. */
  async publish() {
    const path = "accounts/" + this.key() + "/zones/" + encodeURIComponent(this.zone) + "/campaigns";
    // The draft saved first: published as it stands, the server discards it.
    await zoneDraft.flush();
    try {
      const answer = await call("PUT", path, { campaigns: this.list }, { "If-Match": this.etag || '"0"' });
      const warnings = answer.body.warnings || [];
      await this.load(this.zone);
      $("cz-message").textContent =
        "Published as version " + answer.body.version + "." + (warnings.length ? " Unknown ids: " + warnings.join(", ") : "");
      await this.history();
    } catch (error) {
      if (error.status === 412) await this.showConflict();
      else this.showErrors(error);
    }
  },

  /** A stale ETag: what changed since the version loaded, and a way to load it. */
  async showConflict() {
    const log = await call("GET", "accounts/" + this.key() + "/campaigns/history");
    const since = log.body.versions.filter((v) => v.version > this.loadedVersion);
    const box = $("cz-conflict");
    box.replaceChildren(
      el("p", {}, "Someone published this zone's campaigns since you loaded them (version " + this.loadedVersion + "). Your changes are kept here, not published."),
      el("ul", {}, since.map((v) => el("li", {}, "Version " + v.version + " by " + v.author + " at " + v.at + ": " + v.summary))),
    );
    const reload = el("button", { type: "button", id: "cz-reload" }, "Load the current list");
    reload.addEventListener("click", () => this.load(this.zone));
    box.append(reload);
    box.hidden = false;
  },

  /** A 400 on the list: each problem next to the field its path names (the editor of
   * the campaign it names is opened), or in the message line. */
  showErrors(error) {
    const listed = (error.body && error.body.errors) || [];
    const first = listed.map((e) => /^campaigns\[(\d+)\]/.exec(e.path)).find(Boolean);
    if (first) this.openEditor(Number(first[1]));
    showFieldErrors(listed, this.editing);
    $("cz-message").textContent = "Not published: " + problems(error);
  },

  // The editor.

  openEditor(at) {
    this.editing = at;
    const campaign = at === null ? { id: "", content: { type: "custom", source: { strategy: "trending" } } } : this.list[at];
    fillEditor(campaign, this.timeZone);
    $("ce-form").hidden = false;
    $("ce-id").focus();
  },

  closeEditor() {
    this.editing = null;
    $("ce-form").hidden = true;
    clearFieldErrors();
  },

  /** The form's campaign into the list, checked by the server first (a preview of the
   * list with it), so that each problem is shown next to its field. */
  async apply() {
    $("ce-error").textContent = "";
    clearFieldErrors();
    const campaign = readEditor();
    const list = this.list.slice();
    const at = this.editing === null ? list.length : this.editing;
    list.splice(at, this.editing === null ? 0 : 1, campaign);
    clearFieldErrors();
    try {
      await call("POST", "accounts/" + this.key() + "/zones/" + encodeURIComponent(this.zone) + "/preview", {
        campaigns: list,
        segments: segmentBuilder.segments,
      });
    } catch (error) {
      if (error.status === 400) {
        showFieldErrors((error.body && error.body.errors) || [], at);
        $("ce-error").textContent = problems(error);
        return;
      }
      throw error;
    }
    this.list = list;
    this.closeEditor();
    this.render();
    $("cz-message").textContent = campaign.id + " is in the draft; publish to put it live.";
  },

  // Preview and shadow test.

  async preview() {
    const asked = (this.previewAsked = (this.previewAsked || 0) + 1);
    const body = { campaigns: this.list, segments: segmentBuilder.segments };
    const who = $("pv-shopper").value;
    if (who === "new" || who === "returning") body.shopper = { returning: who === "returning" };
    else if (who) body.shopper = { visitor: who };
    const fields = [
      ["pv-page-type", "pageType"],
      ["pv-product", "product"],
      ["pv-category", "category"],
      ["pv-currency", "currency"],
      ["pv-device", "device"],
      ["pv-referrer", "referrer"],
      ["pv-url", "url"],
    ];
    for (const [id, name] of fields) {
      if ($(id).value.trim()) body[name] = $(id).value.trim();
    }
    if ($("pv-at").value) body.at = $("pv-at").value + ":00Z";
    $("pv-error").textContent = "";
    try {
      const answer = (await call("POST", "accounts/" + this.key() + "/zones/" + encodeURIComponent(this.zone) + "/preview", body)).body;
      if (asked !== this.previewAsked) return;
      const list = (answer.campaigns && answer.campaigns.list) || [];
      $("pv-shown").textContent = answer.campaigns
        ? answer.campaigns.shown
          ? "Shows " + answer.campaigns.shown + "."
          : "No campaign qualifies: the zone is empty."
        : "No campaigns: filled as configured (" + answer.strategy + ").";
      $("pv-shown").dataset.campaign = (answer.campaigns && answer.campaigns.shown) || "";
      $("pv-request").textContent = requestText(answer.request);
      $("pv-skipped").replaceChildren(
        ...list.filter((c) => c.skipped).map((c) => el("li", { dataset: { campaign: c.id } }, c.id + ": " + c.skipped)),
      );
      const frame = $("pv-cards");
      frame.srcdoc = answer.html || "<p style='font:14px system-ui'>Nothing to show.</p>";
      frame.dataset.items = answer.items.map((i) => i.id).join(",");
      merchandise.show(answer);
    } catch (error) {
      $("pv-error").textContent = problems(error);
    }
  },

  async startShadow() {
    const path = "accounts/" + this.key() + "/zones/" + encodeURIComponent(this.zone) + "/shadow";
    try {
      await call("POST", path, { campaigns: this.list, segments: segmentBuilder.segments });
      $("sh-error").textContent = "";
      await this.refreshShadow();
    } catch (error) {
      $("sh-error").textContent = problems(error);
    }
  },

  async stopShadow() {
    const path = "accounts/" + this.key() + "/zones/" + encodeURIComponent(this.zone) + "/shadow";
    await call("DELETE", path).catch(() => {});
    await this.refreshShadow();
  },

  /** The zone's shadow test, refreshed every 2 seconds while it runs. */
  async refreshShadow() {
    clearTimeout(this.shadowTimer);
    const path = "accounts/" + this.key() + "/zones/" + encodeURIComponent(this.zone) + "/shadow";
    let figures = null;
    try {
      figures = (await call("GET", path)).body;
    } catch (error) {
      if (error.status !== 404) throw error;
    }
    $("sh-running").hidden = !figures;
    $("sh-idle").hidden = Boolean(figures);
    if (!figures) return;
    const interval = (d) =>
      signed(d.estimate) + (d.low === null ? " (too few trials)" : " (95 %: " + signed(d.low) + " to " + signed(d.high) + ")");
    $("sh-trials").textContent = figures.trials;
    $("sh-campaigns").textContent = figures.campaigns.join(", ");
    $("sh-live").textContent = percent(figures.live.hitRate) + " hits, MRR " + figures.live.mrr.toFixed(3);
    $("sh-draft").textContent = percent(figures.draft.hitRate) + " hits, MRR " + figures.draft.mrr.toFixed(3);
    $("sh-diff-hits").textContent = interval(figures.difference.hitRate);
    $("sh-diff-mrr").textContent = interval(figures.difference.mrr);
    this.shadowTimer = setTimeout(() => this.refreshShadow().catch(() => {}), 2000);
  },

  /** The draft backtested on the kept judged moments: figures, reach, shares, and
   * the products gaining and losing the most exposure drawn as bars. */
  async backtest() {
    const path = "accounts/" + this.key() + "/zones/" + encodeURIComponent(this.zone) + "/backtest";
    $("bt-error").textContent = "";
    let figures;
    try {
      figures = (await call("POST", path, { campaigns: this.list, segments: segmentBuilder.segments })).body;
    } catch (error) {
      $("bt-error").textContent = problems(error);
      return;
    }
    const interval = (d) =>
      signed(d.estimate) + (d.low === null ? " (too few trials)" : " (95 %: " + signed(d.low) + " to " + signed(d.high) + ")");
    const side = (v) => percent(v.hitRate) + " hits, MRR " + v.mrr.toFixed(3);
    const reach = (v) =>
      v.reach.map((r) => r.campaign + (r.segment ? " (" + r.segment + ")" : "") + ": " + r.moments).join(", ") +
      (v.uncampaigned ? (v.reach.length ? ", " : "") + "no campaign: " + v.uncampaigned : "");
    const shares = (v) => [v.onOffer, v.new, v.outOfWindow].map(percent).join(" · ");
    $("bt-result").hidden = false;
    $("bt-moments").textContent = figures.moments + " (" + figures.trials + " trials, " + figures.tookMs + " ms)";
    $("bt-live").textContent = side(figures.live);
    $("bt-draft").textContent = side(figures.draft);
    $("bt-diff-hits").textContent = interval(figures.difference.hitRate);
    $("bt-diff-mrr").textContent = interval(figures.difference.mrr);
    $("bt-reach-live").textContent = reach(figures.live);
    $("bt-reach-draft").textContent = reach(figures.draft);
    $("bt-shares").textContent = "live " + shares(figures.live) + "; draft " + shares(figures.draft);
    exposurePlot($("bt-exposure"), figures.exposure.gained.concat(figures.exposure.lost.slice().reverse()));
  },

  // The audit log and the visitors to preview as.

  async history() {
    await auditLog.show();
  },

  async recentVisitors() {
    const recent = await call("GET", "accounts/" + this.key() + "/visitors/recent?limit=20");
    $("pv-shopper").replaceChildren(
      el("option", { value: "new" }, "A new shopper"),
      el("option", { value: "returning" }, "A returning shopper"),
      ...recent.body.visitors.map((v) =>
        el("option", { value: v.visitorId }, v.visitorId + " (" + v.sessions + " sessions, " + v.viewed + " viewed, seen " + v.lastSeen + ")"),
      ),
    );
  },
};

const signed = (x) => (x >= 0 ? "+" : "") + x.toFixed(3);

/** When a campaign next starts or ends, in the account's time zone. */
function nextText(next, zone) {
  if (!next) return null;
  return el("small", { className: "next", dataset: { at: next.at } }, el("br"), (next.starts ? "starts " : "ends ") + zonedText(next.at, zone));
}

function scheduleText(schedule, zone) {
  if (!schedule) return "Always";
  const parts = [];
  if (schedule.start) parts.push("from " + zonedText(schedule.start, zone));
  if (schedule.end) parts.push("until " + zonedText(schedule.end, zone));
  if (schedule.days) parts.push(schedule.days.join(", "));
  if (schedule.hours) parts.push("hours " + schedule.hours[0] + "–" + schedule.hours[schedule.hours.length - 1]);
  return parts.join(" · ") || "Always";
}

function contentText(content) {
  if (!content) return "–";
  if (content.type === "custom") {
    const source = content.source || {};
    const from = source.manual ? "manual picks" : source.strategy || "–";
    const extras = [];
    if (content.filters && content.filters.length) extras.push(content.filters.length + " filters");
    if (content.boosts && content.boosts.length) extras.push(content.boosts.length + " boosts");
    if (content.pins && content.pins.length) extras.push(content.pins.length + " pins");
    return "Custom: " + from + (extras.length ? " (" + extras.join(", ") + ")" : "");
  }
  if (content.type === "automated") return "Automated: " + (content.strategy || "–");
  if (content.type === "image") return "Image";
  return "HTML";
}

$("cz-zone").addEventListener("change", (event) => campaigns.load(event.target.value).catch(showLoggedOut));
$("cz-new").addEventListener("click", () => campaigns.openEditor(null));
$("cz-publish").addEventListener("click", () => campaigns.publish());
$("cz-discard").addEventListener("click", () =>
  zoneDraft
    .discard()
    .then(() => campaigns.load(campaigns.zone))
    .catch((error) => ($("cz-message").textContent = "Not discarded: " + error.message)),
);
$("pv-form").addEventListener("submit", (event) => {
  event.preventDefault();
  campaigns.preview();
});
$("sh-start").addEventListener("click", () => campaigns.startShadow());
$("sh-stop").addEventListener("click", () => campaigns.stopShadow());
$("bt-run").addEventListener("click", () => campaigns.backtest().catch(showLoggedOut));

/** Horizontal bars of exposure changes, one row a product: gains to the right in green,
 * losses to the left in red, about a middle line. */
function exposurePlot(svg, rows) {
  const SVG = "http://www.w3.org/2000/svg";
  const width = 520;
  const row = 18;
  const label = 120;
  svg.setAttribute("width", width);
  svg.setAttribute("height", Math.max(row, rows.length * row));
  const reach = Math.max(1, ...rows.map((r) => Math.abs(r.change)));
  const half = (width - label) / 2;
  const middle = label + half;
  const nodes = [];
  rows.forEach((r, i) => {
    const text = document.createElementNS(SVG, "text");
    text.setAttribute("x", 0);
    text.setAttribute("y", i * row + 13);
    text.textContent = r.product + " " + (r.change > 0 ? "+" : "") + r.change;
    const bar = document.createElementNS(SVG, "rect");
    const length = (Math.abs(r.change) / reach) * (half - 4);
    bar.setAttribute("x", r.change > 0 ? middle : middle - length);
    bar.setAttribute("y", i * row + 3);
    bar.setAttribute("width", length);
    bar.setAttribute("height", row - 6);
    bar.setAttribute("class", r.change > 0 ? "gained" : "lost");
    bar.dataset.product = r.product;
    bar.dataset.change = r.change;
    nodes.push(text, bar);
  });
  svg.replaceChildren(...nodes);
  svg.setAttribute("aria-label", rows.map((r) => r.product + " " + r.change).join(", "));
}
document.addEventListener("vitrine-segments", () => campaigns.render());
document.addEventListener("vitrine-changed", () => campaigns.history().catch(() => {}));

window.vitrineConsole = { show: () => campaigns.show() };
