// The campaign editor of the console: its form filled from a campaign document and
// read back into one, the content's fields by type, filter, boost and pin rows, the
// pickers that search the catalogue on the server, and each problem of a 400 shown next
// to the field its JSON path names. Uses `$`, `el`, `call`, `state`, `campaigns` and the
// server's `vocabulary` (strategies, days and filter kinds).
"use strict";

// The editor's form: filled from a campaign document, read back into one.

function fillEditor(c, timeZone) {
  const content = c.content || { type: "custom" };
  $("ce-id").value = c.id || "";
  $("ce-name").value = c.name || "";
  $("ce-zone-title").value = c.title || "";
  $("ce-enabled").checked = c.enabled !== false;
  $("ce-segment").replaceChildren(
    el("option", { value: "" }, "Everyone"),
    ...segmentBuilder.segments.map((s) => el("option", { value: s.id, selected: s.id === c.segment }, s.name || s.id)),
  );
  $("ce-min").value = c.minItems ?? "";
  const schedule = c.schedule || {};
  // Entered and shown in the account's time zone, stored as instants.
  $("ce-start").value = toZonedInput(schedule.start, timeZone);
  $("ce-end").value = toZonedInput(schedule.end, timeZone);
  for (const day of vocabulary.days) $("ce-day-" + day).checked = (schedule.days || []).includes(day);
  $("ce-hour-from").value = schedule.hours ? schedule.hours[0] : "";
  $("ce-hour-to").value = schedule.hours ? schedule.hours[schedule.hours.length - 1] : "";
  $("ce-time-zone").textContent = timeZone;
  $("ce-type").value = content.type;
  const source = content.source || {};
  $("ce-source").value = source.manual ? "manual" : "strategy";
  $("ce-strategy").value = content.strategy || source.strategy || "trending";
  $("ce-fallback").value = (content.fallback || source.fallback || []).join(", ");
  const manual = source.manual || {};
  pickers.products.set(manual.products || []);
  pickers.categories.set(manual.categories || []);
  pickers.brands.set(manual.brands || []);
  $("ce-filters").replaceChildren(...(content.filters || []).map((f) => filterRow(f, "filters")));
  $("ce-boosts").replaceChildren(...(content.boosts || []).map((b) => filterRow(b.filter, "boosts", b.factor)));
  $("ce-pins").replaceChildren(...(content.pins || []).map((p) => pinRow(p)));
  $("ce-max").value = content.maxItems ?? content.count ?? "";
  $("ce-template").value = content.template || "";
  const image = (content.images || [])[0] || {};
  $("ce-image-url").value = image.url || "";
  $("ce-image-link").value = image.link || "";
  $("ce-image-alt").value = image.alt || "";
  $("ce-error").textContent = "";
  showContentFields();
}

function readEditor() {
  const list = (text) => text.split(",").map((s) => s.trim()).filter(Boolean);
  const campaign = { id: $("ce-id").value.trim() };
  if ($("ce-name").value.trim()) campaign.name = $("ce-name").value.trim();
  if ($("ce-zone-title").value.trim()) campaign.title = $("ce-zone-title").value.trim();
  if (!$("ce-enabled").checked) campaign.enabled = false;
  if ($("ce-segment").value) campaign.segment = $("ce-segment").value;
  if ($("ce-min").value !== "") campaign.minItems = Number($("ce-min").value);
  const schedule = {};
  if ($("ce-start").value) schedule.start = fromZonedInput($("ce-start").value, campaigns.timeZone);
  if ($("ce-end").value) schedule.end = fromZonedInput($("ce-end").value, campaigns.timeZone);
  const days = vocabulary.days.filter((d) => $("ce-day-" + d).checked);
  if (days.length) schedule.days = days;
  if ($("ce-hour-from").value !== "" && $("ce-hour-to").value !== "") {
    const hours = [];
    for (let h = Number($("ce-hour-from").value); h <= Number($("ce-hour-to").value); h++) hours.push(h);
    schedule.hours = hours;
  }
  if (Object.keys(schedule).length) campaign.schedule = schedule;
  const type = $("ce-type").value;
  const content = { type };
  const max = $("ce-max").value;
  if (type === "automated") {
    content.strategy = $("ce-strategy").value;
    if (list($("ce-fallback").value).length) content.fallback = list($("ce-fallback").value);
    if (max !== "") content.count = Number(max);
  } else if (type === "custom") {
    if ($("ce-source").value === "manual") {
      const manual = {};
      for (const kind of ["products", "categories", "brands"]) {
        if (pickers[kind].ids.length) manual[kind] = pickers[kind].ids.slice();
      }
      content.source = { manual };
    } else {
      content.source = { strategy: $("ce-strategy").value };
      if (list($("ce-fallback").value).length) content.source.fallback = list($("ce-fallback").value);
    }
    const filters = [...$("ce-filters").children].map((row) => row.read());
    if (filters.length) content.filters = filters;
    const boosts = [...$("ce-boosts").children].map((row) => row.read());
    if (boosts.length) content.boosts = boosts;
    const pins = [...$("ce-pins").children].map((row) => row.read());
    if (pins.length) content.pins = pins;
    if (max !== "") content.maxItems = Number(max);
  } else if (type === "image") {
    content.images = [{ url: $("ce-image-url").value, link: $("ce-image-link").value, alt: $("ce-image-alt").value }];
  } else {
    content.template = $("ce-template").value;
  }
  campaign.content = content;
  return campaign;
}

function showContentFields() {
  const type = $("ce-type").value;
  const manual = $("ce-source").value === "manual";
  const show = (id, visible) => ($(id).hidden = !visible);
  show("ce-source-box", type === "custom");
  show("ce-strategy-box", type === "automated" || (type === "custom" && !manual));
  show("ce-manual-box", type === "custom" && manual);
  show("ce-rules-box", type === "custom");
  show("ce-image-box", type === "image");
  show("ce-template-box", type === "html");
  show("ce-max-box", type === "automated" || type === "custom");
}

/** A filter (or a boost's filter with its factor) as a row of the form; its inputs carry
 * the JSON path of their value, for the server's errors. */
function filterRow(filter, list, factor) {
  const row = el("li", { className: "rule-row" });
  const index = () => [...row.parentNode.children].indexOf(row);
  let kind = Object.keys(filter || { price: {} })[0];
  const value = (filter || {})[kind];
  const select = el("select", { "aria-label": "Filter" }, vocabulary.filterKinds.map((k) => el("option", { value: k, selected: k === kind }, k)));
  const fields = el("span", {});
  const read = {};
  const build = (v) => {
    const shape = FILTER_SHAPES[kind] || "list";
    const path = (suffix) => () => "content." + list + "[" + index() + "]" + (list === "boosts" ? ".filter" : "") + "." + kind + suffix;
    if (shape === "range") {
      const min = el("input", { type: "number", step: "any", value: v && v.min !== undefined ? v.min : "", dataset: { path: "min" } });
      const max = el("input", { type: "number", step: "any", value: v && v.max !== undefined ? v.max : "", dataset: { path: "max" } });
      min.pathOf = path(".min");
      max.pathOf = path(".max");
      fields.replaceChildren(labelled("min", min), labelled("max", max));
      read.value = () => {
        const out = {};
        if (min.value !== "") out.min = Number(min.value);
        if (max.value !== "") out.max = Number(max.value);
        return out;
      };
    } else if (shape === "list") {
      const input = el("input", { type: "text", value: Array.isArray(v) ? v.join(", ") : "", placeholder: "comma-separated ids" });
      input.pathOf = path("");
      fields.replaceChildren(labelled("ids", input));
      read.value = () => input.value.split(",").map((s) => s.trim()).filter(Boolean);
    } else if (shape === "flag") {
      const input = el("input", { type: "checkbox", checked: v !== false });
      input.pathOf = path("");
      fields.replaceChildren(labelled("yes", input));
      read.value = () => input.checked;
    } else {
      const input = el("input", { type: "number", step: "any", value: typeof v === "number" ? v : "" });
      input.pathOf = path("");
      fields.replaceChildren(labelled("percent", input));
      read.value = () => Number(input.value);
    }
  };
  build(value);
  select.addEventListener("change", () => {
    kind = select.value;
    build(null);
  });
  const parts = [select, fields];
  let factorInput = null;
  if (list === "boosts") {
    factorInput = el("input", { type: "number", step: "any", value: factor ?? 2 });
    factorInput.pathOf = () => "content.boosts[" + index() + "].factor";
    parts.push(labelled("factor", factorInput));
  }
  const remove = el("button", { type: "button", className: "small" }, "Remove");
  remove.addEventListener("click", () => row.remove());
  row.append(...parts, remove);
  row.read = () => {
    const f = { [kind]: read.value() };
    return list === "boosts" ? { filter: f, factor: Number(factorInput.value) } : f;
  };
  return row;
}

function pinRow(pin) {
  const row = el("li", { className: "rule-row" });
  const index = () => [...row.parentNode.children].indexOf(row);
  const product = el("input", { type: "text", value: (pin && pin.product) || "", className: "pin-product", list: "ce-product-options" });
  product.pathOf = () => "content.pins[" + index() + "].product";
  const place = el("input", { type: "number", min: 1, value: (pin && pin.place) || 1, className: "pin-place" });
  place.pathOf = () => "content.pins[" + index() + "].place";
  // Suggestions for the pin's own field only (never the manual picks' results).
  product.addEventListener("input", () => pickers.products.suggest(product.value, true));
  const remove = el("button", { type: "button", className: "small" }, "Remove");
  remove.addEventListener("click", () => row.remove());
  row.append(labelled("Product", product), labelled("Place", place), remove);
  row.read = () => ({ product: product.value.trim(), place: Number(place.value) });
  return row;
}

/** What a search result shows: a product's image, id and title, price, availability,
 * categories and brand (a category or brand: its id and name). */
function resultParts(found) {
  const parts = [];
  if (found.image) parts.push(el("img", { src: found.image, alt: "", className: "thumb", loading: "lazy" }));
  parts.push(el("span", { className: "name" }, found.id + " — " + found.title));
  if (found.price !== undefined) {
    const facts = [
      found.price ? found.price + (found.wasPrice ? " (was " + found.wasPrice + ")" : "") : "no price in the account's currency",
      found.available ? "available" : "not available now",
      (found.categories || []).join(", "),
      found.brand || "",
    ].filter(Boolean);
    parts.push(el("span", { className: "facts" }, facts.join(" · ")));
  }
  return parts;
}

/** A picker of ids found by the server's catalogue search, shown as removable chips. */
function picker(kind, box) {
  const input = box.querySelector("input");
  const results = box.querySelector(".results");
  const chips = box.querySelector(".chips");
  const self = {
    ids: [],
    timer: null,
    set(ids) {
      self.ids = ids.slice();
      self.draw();
    },
    draw() {
      chips.replaceChildren(
        ...self.ids.map((id) => {
          const remove = el("button", { type: "button", className: "small", "aria-label": "Remove " + id }, "×");
          remove.addEventListener("click", () => {
            self.ids = self.ids.filter((x) => x !== id);
            self.draw();
          });
          return el("li", { dataset: { id } }, id, remove);
        }),
      );
    },
    /** Searches for `text` a moment after the last keystroke; `optionsOnly`: for a
     * pin's field, whose suggestions are its list of options, not the picks' results. */
    suggest(text, optionsOnly) {
      clearTimeout(self.timer);
      self.timer = setTimeout(() => self.search(text, optionsOnly).catch(() => {}), 200);
    },
    async search(text, optionsOnly) {
      // Answers may come back out of order: only the latest search's is shown.
      const asked = (self.asked = (self.asked || 0) + 1);
      if (!text.trim()) {
        if (!optionsOnly) results.replaceChildren();
        return;
      }
      const answer = await call("GET", "accounts/" + campaigns.key() + "/catalogue?kind=" + kind + "&limit=8&q=" + encodeURIComponent(text));
      if (asked !== self.asked) return;
      if (kind === "products") {
        $("ce-product-options").replaceChildren(...answer.body.found.map((f) => el("option", { value: f.id }, f.title)));
      }
      if (optionsOnly) return;
      results.replaceChildren(
        ...answer.body.found.map((found) => {
          const choose = el("button", { type: "button", className: "result", dataset: { id: found.id } }, ...resultParts(found));
          choose.addEventListener("click", () => {
            if (!self.ids.includes(found.id)) self.ids.push(found.id);
            self.draw();
            input.value = "";
            results.replaceChildren();
            input.focus();
          });
          return el("li", {}, choose);
        }),
      );
    },
  };
  input.addEventListener("input", () => self.suggest(input.value));
  return self;
}

const pickers = {
  products: picker("products", $("ce-pick-products")),
  categories: picker("categories", $("ce-pick-categories")),
  brands: picker("brands", $("ce-pick-brands")),
};

/** The server's errors next to their fields: a field's JSON path in the list is
 * `campaigns[at].` and the path its input carries. */
function showFieldErrors(listed, at) {
  clearFieldErrors();
  const prefix = "campaigns[" + at + "].";
  const fields = [...$("ce-form").querySelectorAll("input, select, textarea")];
  for (const error of listed) {
    if (!error.path.startsWith(prefix)) continue;
    const path = error.path.slice(prefix.length);
    const field =
      fields.find((f) => f.pathOf && f.pathOf() === path) ||
      fields.find((f) => f.dataset.field && path.startsWith(f.dataset.field)) ||
      fields.find((f) => f.pathOf && path.startsWith(f.pathOf()));
    if (!field) continue;
    const message = el("span", { className: "field-error error", role: "alert", id: fieldId("err") }, error.message);
    field.setAttribute("aria-invalid", "true");
    field.setAttribute("aria-describedby", message.id);
    (field.closest("label") || field).after(message);
  }
}

function clearFieldErrors() {
  document.querySelectorAll("#ce-form .field-error").forEach((node) => node.remove());
  document.querySelectorAll("#ce-form [aria-invalid]").forEach((node) => {
    node.removeAttribute("aria-invalid");
    node.removeAttribute("aria-describedby");
  });
}

// The form's fixed fields and their JSON paths.
(() => {
  for (const [id, path] of [
    ["ce-id", "id"], ["ce-name", "name"], ["ce-zone-title", "title"], ["ce-segment", "segment"], ["ce-min", "minItems"],
    ["ce-start", "schedule.start"], ["ce-end", "schedule.end"], ["ce-hour-from", "schedule.hours"],
    ["ce-type", "content.type"], ["ce-strategy", "content.source.strategy"], ["ce-fallback", "content.source.fallback"],
    ["ce-max", "content.maxItems"], ["ce-template", "content.template"], ["ce-image-url", "content.images"],
  ]) {
    $(id).dataset.field = path;
  }
  const hours = (id) => $(id).replaceChildren(el("option", { value: "" }, "–"), ...[...Array(24).keys()].map((h) => el("option", { value: h }, h + ":00")));
  hours("ce-hour-from");
  hours("ce-hour-to");
})();

for (const button of document.querySelectorAll("#ce-presets button")) {
  button.addEventListener("click", () => {
    const [start, end] = presetRange(button.dataset.preset, campaigns.timeZone, Date.now());
    $("ce-start").value = start;
    $("ce-end").value = end;
  });
}
$("ce-type").addEventListener("change", showContentFields);
$("ce-source").addEventListener("change", showContentFields);
$("ce-add-filter").addEventListener("click", () => $("ce-filters").append(filterRow(null, "filters")));
$("ce-add-boost").addEventListener("click", () => $("ce-boosts").append(filterRow(null, "boosts")));
$("ce-add-pin").addEventListener("click", () => $("ce-pins").append(pinRow(null)));
$("ce-form").addEventListener("submit", (event) => {
  event.preventDefault();
  campaigns.apply().catch((error) => ($("ce-error").textContent = problems(error)));
});
$("ce-cancel").addEventListener("click", () => campaigns.closeEditor());
