// Vitrine's console, the segment builder: a segment's rule as nested groups of
// conditions (all, any, each group or condition negated with "not"), built from and read
// back into the rule JSON the admin API takes, with the segment's live size (matching now,
// and active in the last 24 hours) asked of the server as the rule changes. Uses `$`,
// `el`, `call` and `state` of app.js.
"use strict";

/** How each condition kind reads: its label and the shape of its value (the kinds
 * offered are the server's, `vocabulary.conditionKinds`; one the console does not know
 * is offered by its name with a list of values). */
const CONDITION_KINDS = {
  visitor: { label: "Visitor is", shape: "choice", options: ["new", "returning"] },
  sessions: { label: "Sessions", shape: "range" },
  daysSinceFirstSeen: { label: "Days since first seen", shape: "range" },
  sessionPageViews: { label: "Page views this session", shape: "range" },
  loggedIn: { label: "Logged in", shape: "choice", options: ["true", "false"] },
  b2bAccount: { label: "B2B account in", shape: "list" },
  userGroup: { label: "User group in", shape: "list" },
  userField: { label: "User record field", shape: "keyed", key: "field", keys: () => vocabulary.userFields },
  age: { label: "Age", shape: "range" },
  orders: { label: "Orders", shape: "range" },
  revenue: { label: "Revenue (account currency)", shape: "range", days: true },
  daysSinceLastOrder: { label: "Days since last order", shape: "range" },
  boughtCategory: { label: "Bought in category", shape: "list" },
  boughtBrand: { label: "Bought brand", shape: "list" },
  categoryAffinity: { label: "Viewed category", shape: "affinity", key: "category" },
  brandAffinity: { label: "Viewed brand", shape: "affinity", key: "brand" },
  basketValue: { label: "Basket value", shape: "range" },
  basketCategory: { label: "Basket holds category", shape: "list" },
  pageType: { label: "Page type in", shape: "list" },
  device: { label: "Device in", shape: "list" },
  referrerHost: { label: "Referrer host in", shape: "list" },
  utm: { label: "UTM parameter", shape: "keyed", key: "parameter", keys: () => vocabulary.utmParameters },
  currency: { label: "Currency in", shape: "list" },
};

/** The groups a rule nests (each a fieldset of its own, not a condition row). */
const GROUP_KINDS = ["all", "any", "not"];

/** The condition kinds the server takes, in its order. */
function offeredKinds() {
  return vocabulary.conditionKinds.filter((k) => !GROUP_KINDS.includes(k));
}

/** How a condition kind reads (one the console does not know: its name, a list). */
function conditionKind(kind) {
  return CONDITION_KINDS[kind] || { label: kind, shape: "list" };
}

let ruleSerial = 0;
const fieldId = (prefix) => prefix + "-" + ++ruleSerial;

/** A labelled input (the label wraps it, so a screen reader reads it with the field). */
function labelled(text, input) {
  return el("label", { className: "field" }, el("span", {}, text), input);
}

const listText = (list) => (Array.isArray(list) ? list.join(", ") : "");
const listOf = (text) =>
  text
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s.length);
const numberOrNull = (text) => (text.trim() === "" ? null : Number(text));

/** The row of one condition: its kind, its value and whether it is negated. */
function conditionRow(kind, value, negated, onChange) {
  const row = el("li", { className: "condition", dataset: { kind } });
  const spec = conditionKind(kind);
  const select = el(
    "select",
    { "aria-label": "Condition" },
    offeredKinds().map((k) => el("option", { value: k, selected: k === kind }, conditionKind(k).label)),
  );
  select.addEventListener("change", () => {
    row.replaceWith(conditionRow(select.value, null, not.checked, onChange));
    onChange();
  });
  const not = el("input", { type: "checkbox", checked: negated });
  const parts = [];
  const input = (attrs, text) => {
    const node = el("input", attrs);
    parts.push(labelled(text, node));
    return node;
  };
  const read = {};
  if (spec.shape === "choice") {
    const choice = el("select", {}, spec.options.map((o) => el("option", { value: o, selected: String(value) === o }, o)));
    parts.push(labelled("is", choice));
    read.value = () => (kind === "loggedIn" ? choice.value === "true" : choice.value);
  } else if (spec.shape === "range") {
    const range = value || {};
    const min = input({ type: "number", step: "any", value: range.min ?? "", className: "min" }, "at least");
    const max = input({ type: "number", step: "any", value: range.max ?? "", className: "max" }, "at most");
    const days = spec.days ? input({ type: "number", min: 1, value: range.days ?? "", className: "days" }, "over days") : null;
    read.value = () => {
      const out = {};
      const low = numberOrNull(min.value);
      const high = numberOrNull(max.value);
      if (low !== null) out.min = low;
      if (high !== null) out.max = high;
      if (days && numberOrNull(days.value) !== null) out.days = numberOrNull(days.value);
      return out;
    };
  } else if (spec.shape === "list") {
    const list = input({ type: "text", value: listText(value), className: "list", placeholder: "comma-separated" }, "values");
    read.value = () => listOf(list.value);
  } else if (spec.shape === "keyed") {
    const given = value || {};
    const key = el("select", {}, spec.keys().map((k) => el("option", { value: k, selected: given[spec.key] === k }, k)));
    parts.push(labelled(spec.key, key));
    const list = input({ type: "text", value: listText(given.in), className: "list", placeholder: "comma-separated" }, "in");
    read.value = () => ({ [spec.key]: key.value, in: listOf(list.value) });
  } else {
    const given = value || {};
    const id = input({ type: "text", value: given[spec.key] || "", className: "id" }, spec.key + " id");
    const views = input({ type: "number", min: 1, value: given.minViews ?? "", className: "min-views" }, "at least views");
    read.value = () => {
      const out = { [spec.key]: id.value.trim() };
      if (numberOrNull(views.value) !== null) out.minViews = numberOrNull(views.value);
      return out;
    };
  }
  const remove = el("button", { type: "button", className: "edit small" }, "Remove");
  remove.addEventListener("click", () => {
    row.remove();
    onChange();
  });
  row.append(labelled("Not", not), select, ...parts, remove);
  row.readRule = () => {
    const rule = { [kind]: read.value() };
    return not.checked ? { not: rule } : rule;
  };
  row.addEventListener("input", onChange);
  row.addEventListener("change", (event) => {
    if (event.target !== select) onChange();
  });
  return row;
}

/** A group of conditions (all or any of them; negated with "not"), built from `rule`. */
function ruleGroup(rule, onChange, depth) {
  let negated = false;
  if (rule && rule.not && (rule.not.all || rule.not.any)) {
    negated = true;
    rule = rule.not;
  }
  const mode = rule && rule.any ? "any" : "all";
  const members = (rule && (rule.any || rule.all)) || (rule && !rule.all && !rule.any && Object.keys(rule).length ? [rule] : []);
  const group = el("fieldset", { className: "group", dataset: { depth } });
  const combinator = el(
    "select",
    { "aria-label": "Combine conditions" },
    el("option", { value: "all", selected: mode === "all" }, "all of"),
    el("option", { value: "any", selected: mode === "any" }, "any of"),
  );
  const not = el("input", { type: "checkbox", checked: negated });
  const list = el("ul", { className: "conditions" });
  for (const member of members) list.append(memberRow(member, onChange, depth));
  const addCondition = el("button", { type: "button", className: "edit small add-condition" }, "Add condition");
  addCondition.addEventListener("click", () => {
    list.append(conditionRow("visitor", "returning", false, onChange));
    onChange();
  });
  const addGroup = el("button", { type: "button", className: "edit small add-group" }, "Add group");
  addGroup.addEventListener("click", () => {
    list.append(el("li", { className: "nested" }, ruleGroup({ any: [] }, onChange, depth + 1)));
    onChange();
  });
  group.append(
    el("legend", {}, labelled("Not", not), combinator, depth ? "" : " these conditions"),
    list,
    addCondition,
    depth < 3 ? addGroup : "",
  );
  combinator.addEventListener("change", onChange);
  not.addEventListener("change", onChange);
  group.readRule = () => {
    const rules = [...list.children].map((item) => (item.readRule ? item.readRule() : item.firstChild.readRule()));
    const combined = { [combinator.value]: rules };
    return not.checked ? { not: combined } : combined;
  };
  return group;
}

/** The row of a group's member: a condition, or a nested group. */
function memberRow(rule, onChange, depth) {
  const inner = rule.not && !rule.not.all && !rule.not.any ? rule.not : null;
  const target = inner || rule;
  if (target.all || target.any || (rule.not && (rule.not.all || rule.not.any))) {
    return el("li", { className: "nested" }, ruleGroup(rule, onChange, depth + 1));
  }
  const kind = Object.keys(target)[0];
  if (!CONDITION_KINDS[kind]) {
    // A kind the builder does not know: kept as it is.
    const row = el("li", { className: "condition", dataset: { kind } }, el("code", {}, JSON.stringify(rule)));
    row.readRule = () => rule;
    return row;
  }
  return conditionRow(kind, target[kind], Boolean(inner), onChange);
}

/** The draft of the segments. */
const segmentsDraft = new DraftKeeper("segments", document.getElementById("sb-draft"));

/** The segment builder of the console: the account's segments, one edited at a time;
 * the segments being edited are kept on the server as their draft (`drafts.js`). */
const segmentBuilder = {
  segments: [],
  etag: null,
  editing: null,
  timer: null,

  async load() {
    const key = encodeURIComponent(state.account.accessKey);
    const answer = await call("GET", "accounts/" + key + "/segments");
    this.segments = answer.body.segments;
    this.etag = answer.etag;
    // The segments' draft on the server, when there is one, is what is edited.
    const draft = await segmentsDraft.load("accounts/" + key + "/segments/draft", this.segments);
    if (draft) this.segments = draft;
    this.showList();
  },

  /** Every segment with the one being edited in its place (when it has an id). */
  edited() {
    const id = $("sb-id").value.trim();
    const list = this.segments.filter((s) => s.id !== this.editing && s.id !== id);
    if (!id) return list;
    const segment = { id, name: $("sb-name").value.trim(), rule: this.rule() };
    const at = this.segments.findIndex((s) => s.id === this.editing);
    list.splice(at < 0 ? list.length : at, 0, segment);
    return list;
  },

  showList() {
    const select = $("sb-segment");
    select.replaceChildren(
      ...this.segments.map((s) => el("option", { value: s.id }, s.name ? s.name + " (" + s.id + ")" : s.id)),
    );
    if (this.segments.length) this.edit(this.segments[0].id);
    else this.startNew();
    document.dispatchEvent(new CustomEvent("vitrine-segments"));
  },

  edit(id) {
    const segment = this.segments.find((s) => s.id === id);
    if (!segment) return;
    this.editing = id;
    $("sb-segment").value = id;
    $("sb-id").value = segment.id;
    $("sb-name").value = segment.name || "";
    this.build(segment.rule);
  },

  startNew() {
    this.editing = null;
    $("sb-id").value = "";
    $("sb-name").value = "";
    this.build({ all: [] });
  },

  build(rule) {
    const onChange = () => this.changed();
    $("sb-rule").replaceChildren(ruleGroup(rule, onChange, 0));
    // A viewer reads the rule; its fields take no typing (nothing could be saved).
    if (state.role !== "editor") {
      for (const field of document.querySelectorAll("#sb-rule input, #sb-rule select, #sb-id, #sb-name")) {
        field.disabled = true;
      }
    }
    this.changed(false);
  },

  rule() {
    return $("sb-rule").firstChild.readRule();
  },

  /** The rule changed: its JSON shown, its size asked for (debounced) and, when the
   * editor changed it (not when a segment was opened), the draft saved. */
  changed(byEditor = true) {
    const rule = this.rule();
    $("sb-json").value = JSON.stringify(rule, null, 1);
    if (byEditor) segmentsDraft.changed(this.edited());
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.size(rule).catch(() => {}), 300);
  },

  async size(rule) {
    const key = encodeURIComponent(state.account.accessKey);
    const output = $("sb-size");
    // Answers may come back out of order: only the latest question's is shown.
    const asked = (this.asked = (this.asked || 0) + 1);
    try {
      const answer = await call("POST", "accounts/" + key + "/segments/size", { rule });
      if (asked !== this.asked) return;
      const size = answer.body;
      output.dataset.matching = size.matching;
      output.dataset.active = size.activeLast24h;
      output.textContent =
        size.matching + " of " + size.visitors + " visitors match now, " + size.activeLast24h + " of them active in the last 24 h";
      $("sb-error").textContent = "";
    } catch (error) {
      if (asked !== this.asked) return;
      output.dataset.matching = "";
      output.textContent = "–";
      $("sb-error").textContent = problems(error);
    }
  },

  /** Puts every segment, the edited one replaced or added, with the ETag loaded. */
  async save() {
    const id = $("sb-id").value.trim();
    const list = this.edited();
    const key = encodeURIComponent(state.account.accessKey);
    // The draft saved first: published as it stands, the server discards it.
    segmentsDraft.changed(list);
    await segmentsDraft.flush();
    try {
      await call("PUT", "accounts/" + key + "/segments", { segments: list }, { "If-Match": this.etag || "*" });
      $("sb-error").textContent = "";
      $("sb-message").textContent = "Segment " + id + " saved.";
      await this.load();
      this.edit(id);
      document.dispatchEvent(new CustomEvent("vitrine-changed"));
    } catch (error) {
      $("sb-message").textContent = "";
      $("sb-error").textContent = problems(error);
    }
  },
};

/** An error's message with each problem's JSON path. */
function problems(error) {
  const listed = error.body && error.body.errors;
  if (!listed || !listed.length) return error.message;
  return listed.map((e) => (e.path ? e.path + ": " : "") + e.message).join("; ");
}

$("sb-segment").addEventListener("change", (event) => segmentBuilder.edit(event.target.value));
for (const id of ["sb-id", "sb-name"]) $(id).addEventListener("input", () => segmentBuilder.changed());
$("sb-discard").addEventListener("click", () =>
  segmentsDraft
    .discard()
    .then(() => segmentBuilder.load())
    .catch((error) => ($("sb-error").textContent = "Not discarded: " + error.message)),
);
$("sb-new").addEventListener("click", () => segmentBuilder.startNew());
$("sb-save").addEventListener("click", () => segmentBuilder.save());
